"""The review page's words per language (ui.yaml beside this file)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

UI = Path(__file__).with_name("ui.yaml")


@lru_cache(maxsize=1)
def _all() -> dict[str, dict[str, str]]:
    return yaml.safe_load(UI.read_text(encoding="utf-8"))


def languages() -> list[str]:
    return list(_all())


def words(locale: str) -> dict[str, str]:
    """The words of locale, else English (a course language the page has no words for)."""
    table = _all()
    return table.get(locale) or table["en"]


def localized(value, locale: str, fallback: str) -> str:
    """A {locale: text} of the rubric in locale, else in fallback, else any."""
    if not isinstance(value, dict):
        return "" if value is None else str(value)
    return value.get(locale) or value.get(fallback) or next(iter(value.values()), "")


def progress(words_: dict[str, str], graded: str) -> str:
    """totals()'s "k of n" in the page's words."""
    done, _, total = graded.partition(" of ")
    return words_["incomplete"].format(done=done, total=total)
