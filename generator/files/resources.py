"""Where the built-in files live: the templates an instructor restyles sit at the repository's top
(`templates/`, beside `content/`); an installed coursepack carries the same files as package data
(`generator/templates/`, mapped there by pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
MARKER = Path("pack") / "lesson.md.j2"  # a file every template folder of coursepack's holds


def builtin_templates() -> Path:
    """The checkout's templates/ when coursepack runs from a checkout, else the installed copy."""
    for folder in (PACKAGE.parent / "templates", PACKAGE / "templates"):
        if (folder / MARKER).is_file():
            return folder
    return PACKAGE.parent / "templates"


TEMPLATES = builtin_templates()


def default_out(content: Path) -> Path:
    """Where a build or a grading run writes by default: build/ beside the content folder (never
    the working directory's)."""
    return Path(content).resolve().parent / "build"
