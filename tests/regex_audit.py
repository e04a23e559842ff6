"""Finding our regexes that backtrack super-linearly, by attacking each one.

Every pattern compiled in our packages (module globals, the privacy detectors, and
literal patterns passed to ``re.*`` calls) is parsed, and for every repeat in it an
attack string is built: text that reaches the repeat (a witness of what precedes it),
the repeat's character pumped thousands of times, then a character that makes the
match fail. Linear patterns take milliseconds on these; one that backtracks
quadratically or worse takes seconds. It is a search, not a proof: it complements
reviewing each pattern (docs/decisions/0033-linear-time-patterns.md).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import time
from collections.abc import Iterator
from pathlib import Path
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

PACKAGES = ("tether", "tenancy")  # workers: import needs a broker; their AST is read
SUFFIXES = ("\x00", "中", "!")
PLAIN = (" ", "a", "1", ".", "-", "\n", "#", "@", ":", "中", "a ", "1 ", "a.", "\t")
_CATEGORY = {
    c.CATEGORY_DIGIT: r"\d",
    c.CATEGORY_SPACE: r"\s",
    c.CATEGORY_WORD: r"\w",
    c.CATEGORY_NOT_DIGIT: r"\D",
    c.CATEGORY_NOT_SPACE: r"\S",
    c.CATEGORY_NOT_WORD: r"\W",
}
_PROBES = "a1 .-中:#@\nA_/"


@dataclasses.dataclass(frozen=True)
class Found:
    where: str
    regex: re.Pattern[str]


def our_patterns(root: Path) -> list[Found]:
    """Every distinct compiled pattern of our packages, with where it was found."""
    seen: dict[tuple[str, int], Found] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            loaded = importlib.import_module(info.name)
            for name, value in vars(loaded).items():
                for regex in _patterns_in(value):
                    seen.setdefault(
                        (regex.pattern, regex.flags), Found(f"{info.name}.{name}", regex)
                    )
    for path in sorted(root.rglob("*.py")):
        for regex, line in _literal_calls(path):
            seen.setdefault((regex.pattern, regex.flags), Found(f"{path}:{line}", regex))
    return [f for f in seen.values() if isinstance(f.regex.pattern, str)]


def _patterns_in(value: Any, depth: int = 0) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 2 and isinstance(value, tuple | list | frozenset | set):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _patterns_in(getattr(value, field.name), depth + 1)


def _literal_calls(path: Path) -> Iterator[tuple[re.Pattern[str], int]]:
    functions = {"compile", "search", "match", "fullmatch", "finditer", "findall", "sub",
                 "subn", "split"}  # fmt: skip
    for node in ast.walk(ast.parse(path.read_text())):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.func.attr in functions
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        flags = 0
        for keyword in node.keywords:
            if keyword.arg == "flags":
                flags = eval(compile(ast.Expression(keyword.value), "<flags>", "eval"), {"re": re})  # noqa: S307
        yield re.compile(node.args[0].value, flags), node.lineno


# -- attacks ---------------------------------------------------------------------------


def attacks(regex: re.Pattern[str], length: int) -> Iterator[str]:
    """Attack strings for ``regex`` (see the module docstring), then plain pumps."""
    parsed = _parser.parse(regex.pattern, regex.flags)
    made: set[str] = set()
    for prefix, pump in _pump_points(list(parsed), ""):
        if not pump:
            continue
        for suffix in SUFFIXES:
            text = prefix + pump * (length // len(pump)) + suffix
            if text not in made:
                made.add(text)
                yield text
    for pump in PLAIN:
        yield pump * (length // len(pump))


def _pump_points(items: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
    """(text reaching a repeat, one iteration of it) for every repeat in ``items``."""
    for index, (op, av) in enumerate(items):
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, body = av
            one = _witness(list(body))
            if high == c.MAXREPEAT or high > 30:
                yield prefix + one * low, one
                # Two neighbours that can both take the pumped text.
                yield prefix + one * low, one + _witness(items[index + 1 : index + 2])
            yield from _pump_points(list(body), prefix)
        elif op == c.SUBPATTERN:
            yield from _pump_points(list(av[-1]), prefix)
        elif op == c.BRANCH:
            for branch in av[1]:
                yield from _pump_points(list(branch), prefix)
        elif op == c.ATOMIC_GROUP:
            yield from _pump_points(list(av), prefix)
        prefix += _witness([(op, av)])


def _witness(items: list[Any]) -> str:
    """One short string the items match (the first branch, the minimum count)."""
    out = []
    for op, av in items:
        if op == c.LITERAL:
            out.append(chr(av))
        elif op in (c.NOT_LITERAL, c.ANY):
            out.append("a" if av != ord("a") else "b")
        elif op == c.IN:
            out.append(_member(av))
        elif op == c.SUBPATTERN:
            out.append(_witness(list(av[-1])))
        elif op == c.BRANCH:
            out.append(_witness(list(av[1][0])))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            out.append(_witness(list(av[2])) * max(av[0], 1))
        elif op == c.ATOMIC_GROUP:
            out.append(_witness(list(av)))
    return "".join(out)


def _member(items: list[Any]) -> str:
    """A character of a class ``[...]``."""
    probe = re.compile(_parser_to_class(items))
    return next((ch for ch in _PROBES if probe.fullmatch(ch)), "a")


def _parser_to_class(items: list[Any]) -> str:
    parts, negate = [], False
    for op, av in items:
        if op == c.NEGATE:
            negate = True
        elif op == c.LITERAL:
            parts.append(re.escape(chr(av)))
        elif op == c.RANGE:
            parts.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
        elif op == c.CATEGORY:
            parts.append(_CATEGORY.get(av, ""))
    return f"[{'^' if negate else ''}{''.join(parts) or 'a'}]"


def slowest(regex: re.Pattern[str], length: int) -> tuple[float, str]:
    """The longest time one attack took (all matches found), and that attack."""
    worst = (0.0, "")
    for text in attacks(regex, length):
        started = time.perf_counter()
        for _ in regex.finditer(text):
            pass
        elapsed = time.perf_counter() - started
        if elapsed > worst[0]:
            worst = (elapsed, text)
    return worst
