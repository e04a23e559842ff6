"""The tenant settings document as console forms, read from its schema (never from a
list of sections here): every section of ``TenantSettingsWrite`` becomes a form, every
field an input by its type, so a section added to the schema appears without a change to
the console. A form is turned back into the API's own request shape and validated by it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
from litestar.datastructures import FormMultiDict

from tenancy.settings.schemas import TenantSettingsRead, TenantSettingsWrite
from tether.console import forms

# Fields of the read document that are not sections (limits: read only, changed at
# /v1/tenant/limits).
_META = ("version", "updated_at", "updated_by_key_id", "limits")
_AT = re.compile(r"at `\$\.([^`]+)`")


@dataclass(slots=True)
class Field:
    path: str  # section.field[.subfield]: the input's name and id
    name: str
    kind: str  # bool | int | float | str | choices | group | json
    value: Any = None
    optional: bool = False
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    children: list[Field] = field(default_factory=list)


def _unwrap(kind: Any) -> tuple[Any, bool]:
    """The type without its metadata, and whether null is allowed."""
    optional = False
    while True:
        if isinstance(kind, msgspec.inspect.Metadata):
            kind = kind.type
        elif isinstance(kind, msgspec.inspect.UnionType):
            rest = [k for k in kind.types if not isinstance(k, msgspec.inspect.NoneType)]
            optional = optional or len(rest) < len(kind.types)
            if len(rest) != 1:
                return kind, optional
            kind = rest[0]
        else:
            return kind, optional


def _field(path: str, name: str, kind: Any, value: Any) -> Field:
    kind, optional = _unwrap(kind)
    found = Field(path, name, "json", value, optional)
    if isinstance(kind, msgspec.inspect.BoolType):
        found.kind = "bool"
    elif isinstance(kind, msgspec.inspect.IntType | msgspec.inspect.FloatType):
        found.kind = "int" if isinstance(kind, msgspec.inspect.IntType) else "float"
        found.minimum = kind.ge if kind.ge is not None else kind.gt
        found.maximum = kind.le if kind.le is not None else kind.lt
    elif isinstance(kind, msgspec.inspect.StrType):
        found.kind = "str"
    elif isinstance(kind, msgspec.inspect.LiteralType):
        found.kind, found.choices = "choice", tuple(str(v) for v in kind.values)
    elif isinstance(kind, msgspec.inspect.ListType):
        item, _ = _unwrap(kind.item_type)
        if isinstance(item, msgspec.inspect.LiteralType):
            found.kind, found.choices = "choices", tuple(str(v) for v in item.values)
    elif isinstance(kind, msgspec.inspect.StructType):
        found.kind = "group"
        values = value if isinstance(value, dict) else {}
        found.children = [
            _field(f"{path}.{f.name}", f.name, f.type, values.get(f.name)) for f in kind.fields
        ]
    return found


def _section_types() -> dict[str, Any]:
    info = msgspec.inspect.type_info(TenantSettingsWrite)
    fields = info.fields if isinstance(info, msgspec.inspect.StructType) else ()
    return {
        f.name: f.type for f in fields if isinstance(_unwrap(f.type)[0], msgspec.inspect.StructType)
    }


def document(read: TenantSettingsRead) -> dict[str, Any]:
    """The sections of a read document, as plain values."""
    plain: dict[str, Any] = msgspec.to_builtins(read)
    return {name: value for name, value in plain.items() if name not in _META}


def sections(values: dict[str, Any]) -> list[Field]:
    """One group per section of the schema, filled with ``values``."""
    return [_field(name, name, kind, values.get(name)) for name, kind in _section_types().items()]


def is_section(name: str) -> bool:
    return name in _section_types()


def _read_field(form: FormMultiDict, spec: Field) -> Any:
    raw = forms.text(form, spec.path).strip()
    if spec.kind == "group":
        return {child.name: _read_field(form, child) for child in spec.children}
    if spec.kind == "bool":
        return spec.path in form
    if spec.kind == "choices":
        return [v for v in form.getall(spec.path, []) if isinstance(v, str)]
    if spec.kind in ("int", "float") and raw:
        try:
            return int(raw) if spec.kind == "int" else float(raw)
        except ValueError:
            return raw  # the schema names it as not a number, next to the field
    if spec.kind == "json":
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if not raw and (spec.optional or spec.kind != "str"):
        return None
    return raw


def read_section(form: FormMultiDict, section: str, current: dict[str, Any]) -> dict[str, Any]:
    """The submitted values of one section (the form's shape follows the schema)."""
    spec = _field(section, section, _section_types()[section], current.get(section))
    value: dict[str, Any] = _read_field(form, spec)
    return value


@dataclass(slots=True)
class Invalid(Exception):
    path: str  # the field it concerns ("" when it cannot be placed)
    message: str


def validate(values: dict[str, Any], reason: str) -> TenantSettingsWrite:
    """The API's request shape, or ``Invalid`` naming the field."""
    try:
        return msgspec.convert({**values, "reason": reason}, TenantSettingsWrite)
    except msgspec.ValidationError as exc:
        message = str(exc)
        at = _AT.search(message)
        path = re.sub(r"\[\d+\]", "", at.group(1)) if at else ""
        raise Invalid(path, _AT.sub("", message).rstrip(" -")) from exc
