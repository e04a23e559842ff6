"""Reading console forms into the API's own request shapes, so a form is validated by the
same rules as the JSON body of the matching API call."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
from litestar.datastructures import FormMultiDict

from tether.core.errors import InvalidInput

T = TypeVar("T")


class FormInvalid(InvalidInput):
    code = "invalid_form"
    title = "Some fields of the form are not valid"


def parse(kind: type[T], data: dict[str, Any]) -> T:
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise FormInvalid(str(exc)) from exc


def text(form: FormMultiDict, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def lines(form: FormMultiDict, name: str) -> list[str]:
    """One entry per non-empty line (taboos, standard phrases)."""
    return [line.strip() for line in text(form, name).splitlines() if line.strip()]


def ident(value: str | None, name: str = "id") -> uuid.UUID | None:
    if not value or not value.strip():
        return None
    try:
        return uuid.UUID(value.strip())
    except ValueError as exc:
        raise FormInvalid(f"{name} is not an id") from exc


def moment(value: str | None, name: str) -> datetime | None:
    """A datetime-local field (read as UTC) or an ISO time with its offset."""
    if not value or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise FormInvalid(f"{name} is not a time") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def number(form: FormMultiDict, name: str, default: int = 0) -> int:
    value = text(form, name).strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise FormInvalid(f"{name} is not a number") from exc


def decimal(form: FormMultiDict, name: str) -> float | None:
    value = text(form, name).strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError as exc:
        raise FormInvalid(f"{name} is not a number") from exc
