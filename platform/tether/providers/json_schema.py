"""A validator for the small JSON-schema subset our LLM prompts use.

Supported keywords: ``type`` (one name or a list), ``properties``, ``required``,
``additionalProperties`` (boolean), ``enum``, ``items`` (one schema), ``minimum``,
``maximum``, ``minLength``, ``maxLength``, ``minItems``, ``maxItems``, plus the
annotations ``title``, ``description``, ``default``, ``examples`` and ``$schema``.
Any other keyword raises :class:`UnsupportedSchema`: a constraint we silently ignored
would let unvalidated model output through.

Stricter than the specification in one place: ``integer`` accepts ``3`` but not ``3.0``,
so callers get a Python ``int`` when they ask for one. Booleans are never numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Schema = Mapping[str, Any]

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema"})
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "items",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    }
)

_BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class UnsupportedSchema(ValueError):
    """The schema itself uses something this validator does not implement (a caller bug)."""


class SchemaViolation(ValueError):
    """The instance does not match the schema; ``path`` locates the first problem."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def check_schema(schema: Schema) -> None:
    """Raise UnsupportedSchema unless every node of ``schema`` uses supported keywords."""
    _check_node(schema, "#")


def validate(instance: Any, schema: Schema) -> None:
    """Raise SchemaViolation at the first place ``instance`` breaks ``schema``.

    The schema is checked first (UnsupportedSchema); schemas are small, so this is cheap.
    """
    check_schema(schema)
    _validate(instance, schema, "$")


def _check_node(schema: Any, where: str) -> None:
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"{where}: a schema must be an object")
    _check_keywords(schema, where)
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise UnsupportedSchema(f"{where}: properties must be an object")
    for key, sub in properties.items():
        _check_node(sub, f"{where}/properties/{key}")
    if "items" in schema:
        _check_node(schema["items"], f"{where}/items")


def _check_keywords(schema: Schema, where: str) -> None:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise UnsupportedSchema(f"{where}: unsupported keyword(s) {sorted(unknown)}")
    for name in _type_names(schema, where):
        if name not in _TYPE_CHECKS:
            raise UnsupportedSchema(f"{where}: unknown type {name!r}")
    if not isinstance(schema.get("additionalProperties", False), bool):
        raise UnsupportedSchema(f"{where}: additionalProperties must be true or false")
    for bound in _BOUNDS:
        if bound in schema and not _TYPE_CHECKS["number"](schema[bound]):
            raise UnsupportedSchema(f"{where}: {bound} must be a number")
    if not isinstance(schema.get("enum", []), list):
        raise UnsupportedSchema(f"{where}: enum must be a list")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        raise UnsupportedSchema(f"{where}: required must be a list of names")


def _type_names(schema: Schema, where: str) -> list[str]:
    declared = schema.get("type")
    if declared is None:
        return []
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UnsupportedSchema(f"{where}: type must be a name or a list of names")
    return names


def _validate(value: Any, schema: Schema, path: str) -> None:
    names = _type_names(schema, path)
    if names and not any(_TYPE_CHECKS[name](value) for name in names):
        raise SchemaViolation(path, f"expected {' or '.join(names)}, got {_json_type(value)}")
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        # The value itself is model output (maybe user data): it stays out of the message.
        raise SchemaViolation(path, f"value is not one of {schema['enum']!r}")
    if isinstance(value, dict):
        _validate_object(value, schema, path)
    elif isinstance(value, list):
        _validate_array(value, schema, path)
    elif isinstance(value, str):
        _check_bounds(len(value), schema, "minLength", "maxLength", path, "length")
    elif _TYPE_CHECKS["number"](value):
        _check_bounds(value, schema, "minimum", "maximum", path, "value")


def _validate_object(value: dict[str, Any], schema: Schema, path: str) -> None:
    properties: Mapping[str, Schema] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            raise SchemaViolation(path, f"missing required property {key!r}")
    for key, item in value.items():
        if key in properties:
            _validate(item, properties[key], f"{path}.{key}")
        elif schema.get("additionalProperties", True) is False:
            raise SchemaViolation(path, f"unexpected property {key!r}")


def _validate_array(value: list[Any], schema: Schema, path: str) -> None:
    _check_bounds(len(value), schema, "minItems", "maxItems", path, "item count")
    if "items" in schema:
        for index, item in enumerate(value):
            _validate(item, schema["items"], f"{path}[{index}]")


def _check_bounds(
    measured: float, schema: Schema, low: str, high: str, path: str, what: str
) -> None:
    if low in schema and measured < schema[low]:
        raise SchemaViolation(path, f"{what} {measured} is below {low} {schema[low]}")
    if high in schema and measured > schema[high]:
        raise SchemaViolation(path, f"{what} {measured} is above {high} {schema[high]}")


def _same(value: Any, option: Any) -> bool:
    # JSON equality: true is not 1, although Python says True == 1.
    if isinstance(value, bool) or isinstance(option, bool):
        return value is option
    return bool(value == option)


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__
