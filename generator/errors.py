"""The one error hierarchy. Library code raises these; only the CLI catches them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Location:
    """A place in a content file, 1-based, as editors show it."""

    path: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.path}:{self.line}:{self.column or 1}"
        return self.path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the content: where, which key, what was expected."""

    location: Location
    message: str
    key: str = ""

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        return f"{self.location}: {key}{self.message}"


class CoursepackError(Exception):
    """Base of every error a user can cause; the CLI prints it without a traceback."""


class ContentError(CoursepackError):
    """All problems found in the content in one run, reported together."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems), key=lambda p: (p.location, p.key, p.message))
        super().__init__(self.render())

    def render(self) -> str:
        count = len(self.problems)
        lines = [str(p) for p in self.problems]
        lines.append(f"{count} problem{'s' if count != 1 else ''} found; nothing was written.")
        return "\n".join(lines)


class VerificationError(CoursepackError):
    """A pack failed verification, so it is not released."""


class ProblemCollector:
    """Gathers problems while loading so that a translator sees all of them at once."""

    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def add(self, path: Path, message: str, key: str = "", line: int = 0, column: int = 0) -> None:
        self.problems.append(Problem(Location(self.rel(path), line, column), message, key))

    def raise_if_any(self) -> None:
        if self.problems:
            raise ContentError(self.problems)
