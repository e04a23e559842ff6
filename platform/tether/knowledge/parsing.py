"""What an upload is (by its content, not its name) and the text inside it.

Accepted: PDF (``%PDF-`` header), UTF-8 / UTF-16 (with BOM) / GB18030 plain text, and
Markdown (text named ``.md``/``.markdown``). A PDF yields one block per page; Markdown
one block per section (the text under a heading); plain text one block.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from pypdf import PdfReader

from tether.knowledge.errors import DocumentUnreadable, UnsupportedDocument

# pypdf reports every oddity of a damaged file as a log line; the document's error says
# what matters to the uploader.
logging.getLogger("pypdf").setLevel(logging.ERROR)

_PDF_MAGIC = b"%PDF-"
_PDF_HEADER_WINDOW = 1024  # the header may follow some junk (ISO 32000-2, 7.5.2)
_CONTROL_SHARE = 0.01  # more control characters than this: not text
# Unicode category Cc except tab, line feed, form feed and carriage return.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
# Only the opening is a regex (constant work per line): the title is cut with str
# methods, because ``\s+(.+?)\s*#*\s*$`` backtracked cubically on a long line of
# spaces (a 100 kB heading held a worker for minutes).
_HEADING_OPEN = re.compile(r" {0,3}#{1,6}\s")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_HAN = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


class Kind(StrEnum):
    PDF = "pdf"
    TEXT = "text"
    MARKDOWN = "markdown"


MEDIA_TYPES = {Kind.PDF: "application/pdf", Kind.TEXT: "text/plain", Kind.MARKDOWN: "text/markdown"}
_EXTENSIONS = {
    ".pdf": Kind.PDF,
    ".txt": Kind.TEXT,
    ".text": Kind.TEXT,
    ".md": Kind.MARKDOWN,
    ".markdown": Kind.MARKDOWN,
}


@dataclass(frozen=True, slots=True)
class Block:
    """A run of text with where it came from: ``page`` (1-based, PDFs) or ``section``."""

    text: str
    page: int | None = None
    section: str | None = None


def is_pdf(data: bytes) -> bool:
    return _PDF_MAGIC in data[:_PDF_HEADER_WINDOW]


def detect(filename: str, data: bytes) -> Kind:
    """The document's kind; UnsupportedDocument when content and name disagree, or the
    content is neither a PDF nor text."""
    suffix = PurePosixPath(filename).suffix.lower()
    claimed = _EXTENSIONS.get(suffix)
    if suffix and claimed is None:
        raise UnsupportedDocument(f"{suffix!r} files are not accepted (PDF, .txt or .md only)")
    if is_pdf(data):
        if claimed not in (None, Kind.PDF):
            raise UnsupportedDocument(f"{filename!r} is a PDF, not a {suffix} file")
        return Kind.PDF
    if claimed == Kind.PDF:
        raise UnsupportedDocument(f"{filename!r} is not a PDF (no %PDF- header)")
    if decode_text(data) is None:
        raise UnsupportedDocument(f"{filename!r} is neither a PDF nor text")
    return claimed or Kind.TEXT


def decode_text(data: bytes) -> str | None:
    """The text of a plain-text file, or None when the bytes are not text."""
    if data.startswith(codecs.BOM_UTF8):
        text = _decode(data[len(codecs.BOM_UTF8) :], "utf-8")
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = _decode(data, "utf-16")
    else:
        # GB18030 is the other encoding Chinese text files come in.
        text = _decode(data, "utf-8")
        if text is None:
            text = _decode(data, "gb18030")
    return _plausible(text)


def _decode(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def _plausible(text: str | None) -> str | None:
    if text is None or "\x00" in text:
        return None
    controls = len(_CONTROLS.findall(text))
    return text if controls <= _CONTROL_SHARE * max(len(text), 1) else None


def count_pdf_pages(data: bytes) -> int | None:
    """The page count, or None when it cannot be read before indexing (an encrypted or
    damaged file: indexing then fails it with a readable error)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            return None
        return len(reader.pages)
    except Exception:  # noqa: BLE001 - untrusted input; pypdf raises many types
        return None


@dataclass(frozen=True, slots=True)
class Reading:
    """A document being read: ``pages`` blocks to come (1 for text), read lazily so
    the caller can report progress between pages."""

    pages: int
    blocks: Iterator[Block]


def read(kind: Kind, data: bytes, max_pages: int) -> Reading:
    """Open the document; DocumentUnreadable with a plain-language reason when it
    cannot be opened (damaged, password-protected, too many pages)."""
    if kind is Kind.PDF:
        reader = _open_pdf(data, max_pages)
        return Reading(len(reader.pages), _pdf_blocks(reader))
    text = decode_text(data)
    if text is None:
        raise DocumentUnreadable("the file is not text in a known encoding")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = _markdown_blocks(text) if kind is Kind.MARKDOWN else [Block(text)]
    return Reading(1, iter(blocks))


def with_text(kind: Kind, blocks: Iterable[Block]) -> list[Block]:
    """The blocks that hold text; DocumentUnreadable when none does."""
    kept = [b for b in blocks if b.text.strip()]
    if not kept:
        raise DocumentUnreadable(
            "the document has no extractable text (a scanned PDF needs OCR first)"
            if kind is Kind.PDF
            else "the document is empty"
        )
    return kept


def extract(kind: Kind, data: bytes, max_pages: int) -> list[Block]:
    """Every text block of the document at once."""
    return with_text(kind, read(kind, data, max_pages).blocks)


def _open_pdf(data: bytes, max_pages: int) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _decrypts_without_password(reader):
            raise DocumentUnreadable(
                "the PDF is password-protected; upload a copy without a password"
            )
        pages = len(reader.pages)  # reads the page tree: a damaged file fails here
    except DocumentUnreadable:
        raise
    except Exception as exc:
        raise DocumentUnreadable("the file is not a readable PDF (it may be damaged)") from exc
    if pages == 0:
        raise DocumentUnreadable("the PDF has no pages")
    if pages > max_pages:
        raise DocumentUnreadable(f"the PDF has {pages} pages; at most {max_pages} are accepted")
    return reader


def _decrypts_without_password(reader: PdfReader) -> bool:
    # Files with only an owner password (printing/copying restrictions) open with "".
    try:
        return bool(reader.decrypt(""))
    except Exception:  # noqa: BLE001 - e.g. AES without a crypto library
        return False


def _pdf_blocks(reader: PdfReader) -> Iterator[Block]:
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text()
        except Exception:  # noqa: BLE001 - one bad page must not lose the others
            text = ""
        yield Block(join_lines(text), page=number)


def join_lines(text: str) -> str:
    """PDF text comes as visual lines: rejoin them into running text (no space between
    Chinese characters, a space between words, hyphenated words mended); blank lines
    stay paragraph breaks."""
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(_join(p.split("\n")) for p in paragraphs if p.strip())


def _join(lines: list[str]) -> str:
    joined = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not joined:
            joined = line
        elif joined.endswith("-") and line[:1].islower():
            joined = joined[:-1] + line
        elif _HAN.match(joined[-1]) or _HAN.match(line[0]):
            joined += line
        else:
            joined += " " + line
    return joined


def _markdown_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    section: str | None = None
    lines: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else heading_title(line)
        if heading is None:
            lines.append(line)
            continue
        blocks.append(Block("\n".join(lines).strip(), section=section))
        section, lines = heading[:256], []
    blocks.append(Block("\n".join(lines).strip(), section=section))
    return blocks


def heading_title(line: str) -> str | None:
    """The title of an ATX heading line (``## Title ##``), None for any other line."""
    opened = _HEADING_OPEN.match(line)
    if opened is None or len(line) <= opened.end():
        return None
    title = line[opened.end() :].strip()
    closed = title.rstrip("#").rstrip()  # the optional closing run of #
    return closed or title[:1]
