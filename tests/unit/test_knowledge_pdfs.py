"""Real PDFs made here with pypdf's writer (text in Helvetica and, for Chinese, the
standard STSong-Light CID font with UCS-2 codes), and what the parser reads from them.
Other knowledge tests and bench/knowledge.py build their files with these helpers."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

from tether.knowledge.errors import DocumentUnreadable
from tether.knowledge.parsing import Kind, count_pdf_pages, extract, join_lines


def _name(value: str) -> NameObject:
    return NameObject(value)


def _fonts() -> DictionaryObject:
    latin = DictionaryObject(
        {
            _name("/Type"): _name("/Font"),
            _name("/Subtype"): _name("/Type1"),
            _name("/BaseFont"): _name("/Helvetica"),
            _name("/Encoding"): _name("/WinAnsiEncoding"),
        }
    )
    cid = DictionaryObject(
        {
            _name("/Type"): _name("/Font"),
            _name("/Subtype"): _name("/CIDFontType0"),
            _name("/BaseFont"): _name("/STSong-Light"),
            _name("/CIDSystemInfo"): DictionaryObject(
                {
                    _name("/Registry"): TextStringObject("Adobe"),
                    _name("/Ordering"): TextStringObject("GB1"),
                    _name("/Supplement"): NumberObject(2),
                }
            ),
        }
    )
    chinese = DictionaryObject(
        {
            _name("/Type"): _name("/Font"),
            _name("/Subtype"): _name("/Type0"),
            _name("/BaseFont"): _name("/STSong-Light"),
            _name("/Encoding"): _name("/UniGB-UCS2-H"),
            _name("/DescendantFonts"): ArrayObject([cid]),
        }
    )
    return DictionaryObject({_name("/F1"): latin, _name("/F2"): chinese})


def _show(line: str) -> str:
    if line.isascii():
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        return f"/F1 11 Tf ({escaped}) Tj T*"
    return f"/F2 11 Tf <{line.encode('utf-16-be').hex()}> Tj T*"


def build_pdf(pages: list[list[str]], *, password: str | None = None) -> bytes:
    """A PDF with one page per entry, each line of text on its own line; ASCII lines in
    Helvetica, others (Chinese) in STSong-Light. ``password`` encrypts it (RC4-128)."""
    writer = PdfWriter()
    for lines in pages:
        page = writer.add_blank_page(595, 842)
        page[_name("/Resources")] = DictionaryObject({_name("/Font"): _fonts()})
        content = DecodedStreamObject()
        body = "\n".join(["BT", "14 TL", "56 790 Td", *(_show(line) for line in lines), "ET"])
        content.set_data(body.encode("latin-1"))
        page.replace_contents(content)
    if password is not None:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def manual_pages(count: int, lines_per_page: int = 40) -> list[list[str]]:
    """A product manual: page ``n`` says which page it is, in English and Chinese."""
    pages = []
    for number in range(1, count + 1):
        lines = [f"Chapter {number}: operating the kettle model K{number}."]
        lines += [
            f"Step {i} on page {number}: fill the kettle to line {i} and press the switch."
            for i in range(1, lines_per_page - 1)
        ]
        lines.append(f"第{number}页：请勿在无水状态下加热水壶。")
        pages.append(lines)
    return pages


def test_a_written_pdf_reads_back_in_english_and_chinese() -> None:
    data = build_pdf(
        [["The warranty lasts two years.", "Keep the receipt."], ["保修期为两年。", "请保留发票。"]]
    )
    blocks = extract(Kind.PDF, data, max_pages=10)
    assert [b.page for b in blocks] == [1, 2]
    assert blocks[0].text == "The warranty lasts two years. Keep the receipt."
    assert blocks[1].text == "保修期为两年。请保留发票。"
    assert count_pdf_pages(data) == 2


def test_an_encrypted_pdf_is_unreadable_with_a_plain_reason() -> None:
    data = build_pdf([["secret plans"]], password="s3cret")
    assert PdfReader(io.BytesIO(data)).is_encrypted
    assert count_pdf_pages(data) is None  # known only to the worker, which fails it
    with pytest.raises(DocumentUnreadable, match="password-protected"):
        extract(Kind.PDF, data, max_pages=10)


def test_a_damaged_pdf_is_unreadable_not_a_crash() -> None:
    data = b"%PDF-1.7\n" + bytes(range(256)) * 40
    assert count_pdf_pages(data) is None
    with pytest.raises(DocumentUnreadable, match="damaged"):
        extract(Kind.PDF, data, max_pages=10)


def test_a_truncated_pdf_is_unreadable() -> None:
    data = build_pdf(manual_pages(3))
    with pytest.raises(DocumentUnreadable):
        extract(Kind.PDF, data[: len(data) // 3], max_pages=10)


def test_a_pdf_without_text_is_unreadable() -> None:
    with pytest.raises(DocumentUnreadable, match="no extractable text"):
        extract(Kind.PDF, build_pdf([[], []]), max_pages=10)


def test_a_pdf_over_the_page_limit_is_unreadable() -> None:
    with pytest.raises(DocumentUnreadable, match="101 pages"):
        extract(Kind.PDF, build_pdf([["x"]] * 101), max_pages=100)


def test_pdf_lines_are_rejoined_into_running_text() -> None:
    assert join_lines("The kettle hea-\nts water\nquickly.") == "The kettle heats water quickly."
    assert join_lines("请勿在无水\n状态下加热。") == "请勿在无水状态下加热。"
    assert join_lines("One.\n\nTwo.") == "One.\n\nTwo."
