"""The pages of grading as one model rendered twice: Markdown (written as it is) and the same
Markdown as a self-contained HTML page (templates/grade/page.html.j2). What students wrote is
only ever shown escaped: raw HTML in the Markdown is turned off."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt
from markupsafe import Markup

from generator.render.render import jinja_env

_MD = MarkdownIt("commonmark", {"html": False}).enable(["table"])


def code(text: str) -> str:
    """text as inline code, whatever backticks it holds."""
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain(text: str) -> str:
    """text in Markdown, shown as it is (no emphasis, links or HTML of its own)."""
    return re.sub(r"([\\`*_{}\[\]<>()#+!|~])", r"\\\1", str(text).replace("\n", " "))


def fenced(lines: list[str], info: str = "text") -> list[str]:
    body = "\n".join(lines)
    fence = "`" * max(3, max((len(run) + 1 for run in re.findall(r"`{3,}", body)), default=3))
    return [fence + info, *lines, fence]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (cells already Markdown)."""
    cell = lambda value: str(value).replace("|", "\\|")  # noqa: E731
    return [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "---|" * len(header),
        *["| " + " | ".join(cell(v) for v in row) + " |" for row in rows],
    ]


def html_page(
    markdown: str, title: str, lang: str, templates: Path, svg: dict[str, str] | None = None
) -> str:
    """The Markdown page as HTML; an image whose file name is a key of svg is drawn inline."""
    body = _MD.render(markdown)
    for name, drawing in (svg or {}).items():
        body = re.sub(
            rf'(?:<p>)?<img src="{re.escape(name)}" alt="([^"]*)" ?/?>(?:</p>)?',
            lambda m: f'<figure class="chart" aria-label="{m.group(1)}">{drawing}</figure>',
            body,
        )
    return document(Markup(body), title, lang, templates)


def document(body: Markup, title: str, lang: str, templates: Path) -> str:
    """An HTML body (already safe) as a self-contained page of grading."""
    return (
        jinja_env(templates)
        .get_template("grade/page.html.j2")
        .render(lang=lang, title=title, body=body)
    )
