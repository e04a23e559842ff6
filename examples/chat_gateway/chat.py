"""A chat gateway on Tether, played end to end against `make run`.

Two sessions of one user with the persona Luna, in Chinese and English. Per message the
gateway makes ONE call (resolve, cached + context as ready chat messages + capture of the
turn, within a deadline); the model's answer is captured too. After the first session
ends, a worker extracts memories; in the second session Luna "remembers last time".

    .venv/bin/python examples/chat_gateway/chat.py            # reads gateway.key
    TETHER_API_KEY=tth_… .venv/bin/python examples/chat_gateway/chat.py

There is no language model here: Luna's answers are scripted, so that what you see is
what Tether adds (the `## …` sections of the system message)."""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

from tether_client import ChatContext, Tether

PERSONA, CREATOR = "luna", "studio-7"
SYSTEM = "You are Luna, a warm companion. Answer in the user's language."
FIRST_SESSION = [
    ("你好！我叫小林，在深圳一家银行工作。", "你好小林！银行的工作忙吗？"),
    ("I love hiking on weekends, especially in the mountains.", "That sounds wonderful!"),
    ("我超爱吃辣的，尤其是火锅。", "那你一定知道很多好吃的火锅店！"),
    ("I'm allergic to peanuts, by the way.", "Thanks for telling me, I'll remember."),
]
SECOND_SESSION = [
    ("周末去哪儿吃饭好？", "要不要去吃你最爱的火锅？记得避开花生哦。"),
    ("Any plans you'd suggest for Saturday?", "How about a hike in the mountains, like you love?"),
]


def show(ctx: ChatContext, text: str) -> None:
    memory = "memory" if ctx.memory else f"NO memory ({', '.join(ctx.degraded)})"
    print(f"\n👤 {text}\n   [{memory}, {ctx.elapsed_ms:.0f} ms]")
    for line in ctx.context.splitlines():
        if line.startswith("## ") or line.startswith("- "):
            print(f"   │ {line}")


def play(tether: Tether, user: str, session_id: str, turns: list[tuple[str, str]]) -> str:
    chat = tether.gateway(deadline=2.0)
    history: list[dict[str, str]] = []
    relationship_id = ""
    for text, answer in turns:
        ctx = chat.message(
            user=user,
            persona=PERSONA,
            creator=CREATOR,
            text=text,
            session_id=session_id,
            system=SYSTEM,
            history=history,
        )
        show(ctx, text)
        chat.reply(ctx, answer, session_id=session_id)  # what the model said, captured
        print(f"🌙 {answer}")
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        relationship_id = ctx.relationship_id or relationship_id
    return relationship_id


def wait_for_memories(tether: Tether, relationship_id: str, seconds: float = 90) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [m.content for m in tether.memories.list(relationship_id, active=True)]
        if found:
            return found
        time.sleep(0.5)
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-file", default="gateway.key", help="a gateway API key")
    parser.add_argument("--user", default=f"demo-{uuid.uuid4().hex[:6]}", help="user external id")
    args = parser.parse_args()
    key = os.environ.get("TETHER_API_KEY") or Path(args.key_file).read_text().strip()
    with Tether(key) as tether:
        print(f"— session 1 (user {args.user}) —")
        rid = play(tether, args.user, "session-1", FIRST_SESSION)
        tether.flush(timeout=10)  # every turn is in Tether before the session ends
        tether.turns.end_session(rid, "session-1")
        print("\n— session 1 ended; a worker extracts memories —")
        memories = wait_for_memories(tether, rid)
        for content in memories:
            print(f"   🧠 {content}")
        if not memories:
            print("no memories were extracted: is the worker running (make run)?")
            return 1
        print("\n— session 2: Luna remembers last time —")
        play(tether, args.user, "session-2", SECOND_SESSION)
        stats = tether.capture_stats()
    print(f"\ncaptured {stats.sent} turns, dropped {stats.dropped}, failed {stats.failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
