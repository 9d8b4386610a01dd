"""A build's memo: what one build computes once and reuses (file digests, deflated files, parsed
Markdown sections, leak scans, formulas ...), held by the build and dropped with it.

`with build_memo():` makes one for a block (coursepack build, render_all, a test); inside it,
`with lesson_memo():` gives one lesson x locale tables of its own (what its documents share),
dropped when the lesson is done, while the build-wide tables stay. Outside any block nothing is
kept: each call computes afresh. The memo in use is a context variable, so a thread starts with
none and a forked worker has its parent's, as it was at the fork; nothing outlives the block
that made it, and there is nothing to reset by hand.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator


class Memo:
    """The tables of one build (build) and of the lesson being made (lesson), by name."""

    def __init__(self, build: dict[str, dict] | None = None):
        self.build: dict[str, dict] = {} if build is None else build
        self.lesson: dict[str, dict] = {}

    def table(self, name: str, lesson: bool) -> dict:
        tables = self.lesson if lesson else self.build
        return tables.setdefault(name, {})

    def sizes(self) -> dict[str, int]:
        """Entries per table, build-wide and the lesson's ("lesson:" names): for tests."""
        return {
            **{k: len(v) for k, v in self.build.items()},
            **{f"lesson:{k}": len(v) for k, v in self.lesson.items()},
        }


# The memo of the block being run (None outside one): a variable of the running context, set and
# reset by the blocks below only.
_CURRENT: ContextVar[Memo | None] = ContextVar("coursepack_memo", default=None)


@contextmanager
def build_memo() -> Iterator[Memo]:
    """A fresh memo for the block: a build, a tool's run, a test."""
    token = _CURRENT.set(Memo())
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


@contextmanager
def lesson_memo() -> Iterator[Memo]:
    """The current build's memo with empty lesson tables, for one lesson x locale (a build with none
    gets a fresh one for the block)."""
    outer = _CURRENT.get()
    token = _CURRENT.set(Memo(outer.build if outer is not None else None))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def current() -> Memo | None:
    return _CURRENT.get()


def table(name: str, lesson: bool = False) -> dict:
    """The current memo's table `name` (a lesson's own where lesson=True); outside a memo, a new
    empty one that nobody keeps."""
    memo = _CURRENT.get()
    return memo.table(name, lesson) if memo is not None else {}


def _kept(lesson: bool) -> Callable[[Callable], Callable]:
    def decorate(function: Callable) -> Callable:
        name = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def kept(*args: Any) -> Any:
            found = table(name, lesson)
            if args not in found:
                found[args] = function(*args)
            return found[args]

        return kept

    return decorate


# Pure functions of hashable arguments, computed once per build (per_build) or per lesson x locale
# (per_lesson: large values that only one lesson's documents share).
per_build = _kept(lesson=False)
per_lesson = _kept(lesson=True)
