"""Where the built-in files live: the templates an instructor restyles sit at the repository's top
(`templates/`, beside `content/`); an installed coursepack carries the same files as package data
(`generator/templates/`, mapped there by pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def builtin_templates() -> Path:
    installed = PACKAGE / "templates"
    return installed if installed.is_dir() else PACKAGE.parent / "templates"


TEMPLATES = builtin_templates()
