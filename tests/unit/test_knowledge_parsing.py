"""Upload inspection: the kind comes from the content, limits are checked up front."""

from __future__ import annotations

import codecs

import pytest

from tests.unit.test_knowledge_pdfs import build_pdf
from tether.core.settings import KnowledgeSettings
from tether.knowledge.documents import clean_filename, inspect
from tether.knowledge.errors import (
    DocumentTooLarge,
    DocumentUnreadable,
    EmptyDocument,
    TooManyPages,
    UnsupportedDocument,
)
from tether.knowledge.parsing import Kind, decode_text, detect, extract

PDF = build_pdf([["hello"]])


@pytest.mark.parametrize(
    ("filename", "data", "kind"),
    [
        ("manual.pdf", PDF, Kind.PDF),
        ("MANUAL.PDF", PDF, Kind.PDF),
        ("no-extension", PDF, Kind.PDF),
        ("notes.txt", b"plain words", Kind.TEXT),
        ("guide.md", "# 标题\n正文".encode(), Kind.MARKDOWN),
        ("guide.markdown", b"# Title", Kind.MARKDOWN),
        ("no-extension", b"plain words", Kind.TEXT),
    ],
)
def test_the_kind_is_read_from_the_content(filename: str, data: bytes, kind: Kind) -> None:
    assert detect(filename, data) is kind


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("manual.pdf", b"just text pretending"),
        ("notes.txt", PDF),
        ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
        ("archive.docx", b"PK\x03\x04" + bytes(64)),
        ("binary.txt", b"\x00\x01\x02\x03" * 100),
        ("script.exe", b"MZ text"),
    ],
)
def test_other_content_is_refused(filename: str, data: bytes) -> None:
    with pytest.raises(UnsupportedDocument):
        detect(filename, data)


def test_text_in_common_encodings_decodes() -> None:
    text = "保修期为两年 warranty"
    assert decode_text(codecs.BOM_UTF8 + text.encode()) == text
    assert decode_text(text.encode("utf-16")) == text
    assert decode_text(text.encode("gb18030")) == text
    assert decode_text(b"\x00\x00binary") is None


def test_markdown_is_split_by_section_and_code_fences_are_not_headings() -> None:
    source = "intro line\n# Setup\nplug it in\n```\n# not a heading\n```\n## Care 保养\nwipe it\n"
    blocks = extract(Kind.MARKDOWN, source.encode(), max_pages=1)
    assert [(b.section, b.text) for b in blocks] == [
        (None, "intro line"),
        ("Setup", "plug it in\n```\n# not a heading\n```"),
        ("Care 保养", "wipe it"),
    ]


def test_an_empty_text_file_cannot_be_indexed() -> None:
    with pytest.raises(DocumentUnreadable, match="empty"):
        extract(Kind.TEXT, b"  \n\n ", max_pages=1)


LIMITS = KnowledgeSettings(max_upload_bytes=4096, max_pdf_pages=3)


def test_inspection_checks_size_pages_and_emptiness_before_storing() -> None:
    with pytest.raises(DocumentTooLarge):
        inspect("big.txt", b"x" * 4097, LIMITS)
    with pytest.raises(TooManyPages):
        inspect("long.pdf", build_pdf([["page"]] * 4), LIMITS)
    with pytest.raises(EmptyDocument):
        inspect("blank.md", b"\n \n", LIMITS)
    found = inspect("ok.pdf", build_pdf([["page"]] * 3), LIMITS)
    assert (found.kind, found.page_count, len(found.sha256)) == (Kind.PDF, 3, 64)


def test_an_encrypted_pdf_passes_inspection_and_fails_later() -> None:
    found = inspect("locked.pdf", build_pdf([["x"]], password="pw"), LIMITS)
    assert found.page_count is None


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("manual.pdf", "manual.pdf"),
        ("C:\\Users\\me\\manual.pdf", "manual.pdf"),
        ("../../etc/passwd", "passwd"),
        ("bad\x00name\n.txt", "badname.txt"),
        ("", "document"),
        (None, "document"),
    ],
)
def test_file_names_lose_paths_and_control_characters(raw: str | None, clean: str) -> None:
    assert clean_filename(raw) == clean
