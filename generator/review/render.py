"""Students' Markdown as safe HTML: CommonMark with tables and $math$ (MathML, as the lesson pages
draw it: generator/render/html.py), raw HTML never passed through, then sanitized by nh3 (ammonia) to an
allow-list of tags and attributes. What students wrote is untrusted: no script, no event
attribute, no javascript: link survives, and the page's Content-Security-Policy allows no inline
script besides."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from generator.render.html import converted_formula

TAGS = {
    "p",
    "br",
    "hr",
    "em",
    "strong",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
    "div",
    # MathML, as latex2mathml writes it
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "msup",
    "msub",
    "msubsup",
    "mfrac",
    "msqrt",
    "mroot",
    "mtext",
    "mspace",
    "mtable",
    "mtr",
    "mtd",
    "mover",
    "munder",
    "munderover",
    "mstyle",
    "mpadded",
    "mphantom",
    "menclose",
    "semantics",
    "annotation",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "th": {"style"},
    "td": {"style"},
    "math": {"display", "xmlns"},
    "mo": {"stretchy", "fence", "separator", "lspace", "rspace"},
    "mstyle": {"displaystyle", "scriptlevel"},
    "mspace": {"width"},
    "mtable": {"columnalign"},
    "menclose": {"notation"},
    "mfrac": {"linethickness"},
}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    dollarmath_plugin(
        md,
        double_inline=True,
        allow_labels=False,
        renderer=lambda latex, options: converted_formula(latex, options["display_mode"])[0],
    )
    return md


@lru_cache(maxsize=4096)
def markdown_html(text: str) -> str:
    return nh3.clean(
        _parser().render(text),
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
