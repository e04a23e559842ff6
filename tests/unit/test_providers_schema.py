"""The JSON-schema subset validator: what it accepts, what it rejects and where it says
the problem is, and the schema keywords it refuses to silently ignore."""

from __future__ import annotations

from typing import Any

import pytest

from tether.providers.json_schema import (
    SchemaViolation,
    UnsupportedSchema,
    check_schema,
    validate,
)

FACTS = {
    "type": "object",
    "description": "what the extractor returns",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 10},
                    "kind": {"enum": ["preference", "fact"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "count": {"type": "integer", "minimum": 1},
                    "negated": {"type": "boolean"},
                    "source": {"type": ["string", "null"]},
                },
                "required": ["text", "kind"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["facts"],
}


def fact(**overrides: Any) -> dict[str, Any]:
    return {"text": "喜欢吃辣", "kind": "preference", **overrides}


@pytest.mark.parametrize(
    "instance",
    [
        {"facts": []},
        {"facts": [fact()]},
        {"facts": [fact(confidence=1, count=2, negated=False, source=None)]},
        {"facts": [fact(confidence=0.0, source="chat")], "extra": "allowed at top level"},
        {"facts": [fact(text="x" * 10)]},
    ],
)
def test_matching_instances_pass(instance: Any) -> None:
    validate(instance, FACTS)


@pytest.mark.parametrize(
    ("instance", "path", "reason"),
    [
        ([], "$", "expected object, got array"),
        ({}, "$", "missing required property 'facts'"),
        ({"facts": {}}, "$.facts", "expected array, got object"),
        ({"facts": [fact()] * 4}, "$.facts", "item count 4 is above maxItems 3"),
        ({"facts": [fact(text="")]}, "$.facts[0].text", "length 0 is below minLength 1"),
        ({"facts": [fact(text="x" * 11)]}, "$.facts[0].text", "above maxLength 10"),
        ({"facts": [fact(kind="opinion")]}, "$.facts[0].kind", "not one of"),
        ({"facts": [fact(confidence=1.5)]}, "$.facts[0].confidence", "above maximum 1"),
        ({"facts": [fact(confidence=-0.1)]}, "$.facts[0].confidence", "below minimum 0"),
        ({"facts": [fact(confidence="high")]}, "$.facts[0].confidence", "got string"),
        ({"facts": [fact(confidence=True)]}, "$.facts[0].confidence", "got boolean"),
        ({"facts": [fact(count=2.0)]}, "$.facts[0].count", "expected integer, got number"),
        ({"facts": [fact(count=True)]}, "$.facts[0].count", "expected integer, got boolean"),
        ({"facts": [fact(count=0)]}, "$.facts[0].count", "below minimum 1"),
        ({"facts": [fact(negated="no")]}, "$.facts[0].negated", "expected boolean"),
        ({"facts": [fact(source=3)]}, "$.facts[0].source", "expected string or null"),
        ({"facts": [fact(), fact(mood="x")]}, "$.facts[1]", "unexpected property 'mood'"),
        ({"facts": [{"text": "a"}]}, "$.facts[0]", "missing required property 'kind'"),
    ],
)
def test_violations_name_the_path_and_reason(instance: Any, path: str, reason: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        validate(instance, FACTS)
    assert caught.value.path == path
    assert reason in caught.value.reason


def test_enum_does_not_confuse_true_with_one() -> None:
    with pytest.raises(SchemaViolation):
        validate(True, {"enum": [1, 2]})
    with pytest.raises(SchemaViolation):
        validate(1, {"enum": [True]})
    validate(1.0, {"enum": [1]})
    validate(None, {"enum": [None, "x"]})


def test_enum_violation_does_not_echo_the_value() -> None:
    # Model output may hold user data; error messages end up in logs.
    with pytest.raises(SchemaViolation) as caught:
        validate("13812345678", {"enum": ["a"]})
    assert "13812345678" not in str(caught.value)


def test_string_length_counts_characters_not_bytes() -> None:
    validate("我喜欢吃辣", {"type": "string", "maxLength": 5})


def test_empty_schema_accepts_anything() -> None:
    for value in (None, 1, "x", [1, {}], {"a": [None]}):
        validate(value, {})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "array", "items": {"oneOf": [{"type": "string"}]}},
        {"type": "datetime"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "integer", "minimum": "0"},
        {"enum": "abc"},
        {"required": "a"},
    ],
)
def test_unsupported_schemas_are_refused_not_ignored(schema: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema):
        check_schema(schema)
    with pytest.raises(UnsupportedSchema):
        validate({"a": "x"} if schema.get("type") == "object" else ["x"], schema)


def test_the_facts_schema_is_supported() -> None:
    check_schema(FACTS)
