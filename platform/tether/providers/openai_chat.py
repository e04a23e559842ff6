"""JSON answers from any OpenAI-compatible ``/chat/completions`` endpoint.

Nothing unvalidated leaves this module: the answer is parsed and checked against the
caller's schema, and anything else is a ProviderError. Log lines carry the model, the
reason and the schema path, never the prompt or the answer (both may hold user data).
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec

from tether.core.instruments import provider_call
from tether.providers import json_schema
from tether.providers.base import ProviderError
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint

log = logging.getLogger(__name__)

# Reasoning models served by Ollama or vLLM may think aloud before answering.
_THINKING = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


def unfence(text: str) -> str | None:
    r"""The body of a Markdown code fence (```json … ```) that is all of ``text``.

    String methods, not ``\s*```(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```\s*$``: that
    backtracked quadratically on a long run of spaces inside the fence."""
    stripped = text.strip()
    if len(stripped) < 6 or not (stripped.startswith("```") and stripped.endswith("```")):
        return None
    inner = stripped[3:-3]
    if inner[:4] in ("json", "JSON"):
        inner = inner[4:]
    inner = inner.lstrip(" \t")
    inner = inner.removeprefix("\n").rstrip(" \t")
    return inner.removesuffix("\n")


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _ChatAnswer(msgspec.Struct):
    choices: list[_Choice]


class OpenAIChatProvider:
    """One ``temperature 0``, JSON-mode chat completion per call, validated against a schema.

    The schema is appended to the system message (compact JSON), so the prompt need not
    repeat it.

    Args:
        endpoint: the shared HTTP endpoint (owns the connection pool).
        model: the model name sent to the server.
    """

    def __init__(self, endpoint: OpenAICompatibleEndpoint, *, model: str) -> None:
        self._endpoint = endpoint
        self._model = model

    @provider_call("llm", "openai")
    async def complete_json(self, system: str, user: str, schema: dict[str, Any]) -> Any:
        """The parsed answer, valid against ``schema``; ProviderError on anything else.

        Raises:
            ProviderError: the call failed, or the answer was not valid JSON for the schema.
            json_schema.UnsupportedSchema: ``schema`` uses a keyword we cannot check (a bug
                in the caller, raised before any request is made).
        """
        json_schema.check_schema(schema)
        raw = await self._endpoint.post("chat/completions", self._request(system, user, schema))
        value = self._parse(self._answer_text(raw))
        try:
            json_schema.validate(value, schema)
        except json_schema.SchemaViolation as exc:
            raise self._fail(f"answer does not match the schema at {exc}") from None
        return value

    def _request(self, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        instruction = "Answer with one JSON value that matches this JSON schema: "
        schema_text = msgspec.json.encode(schema).decode()
        return {
            "model": self._model,
            "messages": [
                {"role": "system", "content": f"{system}\n\n{instruction}{schema_text}"},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }

    def _answer_text(self, raw: bytes) -> str:
        """The first choice's message content; ProviderError when missing, empty or cut off."""
        try:
            answer = msgspec.json.decode(raw, type=_ChatAnswer)
        except msgspec.DecodeError as exc:
            raise self._fail(f"unusable chat completion ({exc})") from None
        if not answer.choices:
            raise self._fail("chat completion has no choices")
        choice = answer.choices[0]
        if choice.finish_reason == "length":
            raise self._fail("answer was cut off at the token limit")
        if not choice.message.content or not choice.message.content.strip():
            raise self._fail("answer is empty")
        return choice.message.content

    def _parse(self, text: str) -> Any:
        text = _THINKING.sub("", text, count=1)
        fenced = unfence(text)
        if fenced is not None:
            text = fenced
        try:
            return msgspec.json.decode(text.strip())
        except msgspec.DecodeError:
            raise self._fail("answer is not valid JSON") from None

    def _fail(self, reason: str) -> ProviderError:
        log.warning("chat model %s: %s", self._model, reason)
        return ProviderError(f"chat model {self._model}: {reason}")

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._endpoint.aclose()
