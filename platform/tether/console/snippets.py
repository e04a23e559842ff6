"""A pasted conversation snippet read as the turns of an extraction preview: one turn a
line, ``user:`` / ``assistant:`` (or ``用户：`` / ``助手：``) naming the speaker; a line
without a speaker continues the turn above it (the first one is the user's)."""

from __future__ import annotations

import re

SPEAKER = re.compile(r"^\s*(user|u|assistant|a|bot|用户|助手)\s*[:：]\s*", re.IGNORECASE)
ROLES = {"user": "user", "u": "user", "用户": "user"}


def turns_of(snippet: str) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for line in snippet.splitlines():
        if not line.strip():
            continue
        found = SPEAKER.match(line)
        if found is None and turns:
            turns[-1]["text"] += "\n" + line.strip()
            continue
        role = ROLES.get(found.group(1).lower(), "assistant") if found else "user"
        text = line[found.end() :] if found else line
        turns.append({"role": role, "text": text.strip()})
    return [turn for turn in turns if turn["text"]]
