"""lesson.html: the lesson as one self-contained page that works offline in any browser.

Rendered from the final lesson.md text through markdown-it (the same CommonMark + tables
configuration as lesson.md and the notebook, plus `$`/`$$` math and heading anchors) and the Jinja
template `pack/lesson.html.j2`:

- every formula becomes MathML at build time (latex2mathml); a formula that does not convert is an
  error naming it, never text left in the page;
- code is highlighted at build time (pygments, CSS classes, a stylesheet inside the page);
- mermaid figures are drawn in the page by the vendored, pinned mermaid (generator/vendor/mermaid,
  MIT, its licence kept with it); see BENCHMARKS.md for why it is drawn there, not pre-rendered.
  A single-lesson pack's page inlines it; the pages of a course bundle share the bundle's one copy,
  `../mermaid.min.js` (`mermaid_src`), so that a bundle does not carry it once per lesson;
- the answer edition's measured bench becomes SVG charts (generator/render/charts.py) after its table;
- a Content-Security-Policy forbids every fetch: inline styles and scripts only, images as data:
  (CSP). A bundle's page may load scripts from its own origin as well (CSP_SHARED): opened from
  file://, Chromium lets 'self' match file: URLs (and no network address); Firefox does not apply
  the page's policy to file: scripts at all; served over HTTP, 'self' is that server and no other.

Raw HTML blocks (the hints' <details>) come only from templates: the loader refuses raw HTML in
lesson prose. Links to another pack's lesson.md point to its lesson.html in the page.

Labels the page needs, besides those of `charts.ENGLISH_LABELS` (`ENGLISH_LABELS` has them all):

- ``permalink``   accessible name of the '#' link next to each heading

In a build they come from the locale file, `pack.page` (a mapping with the keys above), and the
table titles (`table:ID`) from the lesson text's `measured.tables`; see `page_labels`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from html import escape, unescape
from pathlib import Path

import jinja2
from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from generator.render import charts as C
from generator.files.archive import constant_part, find_part
from generator.errors import CoursepackError
from generator.content.markdown import EXTERNAL, heading_slug, parse_by_section
from generator.files.memo import per_build, per_lesson

TEMPLATE = "pack/lesson.html.j2"
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
CSP_SHARED = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
MERMAID_FILE = "mermaid.min.js"  # a course bundle's one copy, at its root (mermaid_file())
VENDOR = Path(__file__).resolve().parent.parent / "vendor" / "mermaid"
MERMAID_VERSION = "11.17.2"
MERMAID_SHA256 = "581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8"
ENGLISH_LABELS = {**C.ENGLISH_LABELS, "permalink": "Link to this section"}
PAGE_LABELS = ("permalink",)
SLOT = "/* coursepack: the vendored mermaid */"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
LESSON_LINK = re.compile(r"^(?P<path>[^:#?]*/)?lesson\.md(?P<rest>[#?].*)?$")


class HtmlError(CoursepackError):
    pass


def lesson_html(
    markdown_text: str,
    *,
    lang: str,
    title: str,
    env: jinja2.Environment,
    bench: dict | None,
    labels: dict[str, str],
    mermaid_src: str | None = None,
) -> bytes:
    """The page for one pack: pure (same inputs, same bytes). mermaid_src: where a page with figures
    loads the shared mermaid from (a course bundle's page); None: inlined, the page stands alone."""
    missing = [key for key in (*C.CHART_LABELS, *PAGE_LABELS) if key not in labels]
    if missing:
        raise HtmlError(f"lesson.html: labels missing: {', '.join(missing)}")
    body, diagrams = _body(
        markdown_text, json.dumps(bench, sort_keys=True), json.dumps(labels, sort_keys=True)
    )
    shared = bool(diagrams and mermaid_src)
    page = env.get_template(TEMPLATE).render(
        lang=lang,
        title=title,
        csp=CSP_SHARED if shared else CSP,
        body=Markup(body),
        highlight_css=Markup(_highlight_css()),
        figures=bool(diagrams),
        mermaid_src=mermaid_src if shared else None,
        mermaid=Markup(SLOT) if diagrams and not shared else None,
        mermaid_version=MERMAID_VERSION,
    )
    if not diagrams or shared:
        return page.encode("utf-8")
    if page.count(SLOT) != 1:
        raise HtmlError(f"{TEMPLATE}: must place {{{{ mermaid }}}} once inside a <script>")
    head, _, tail = page.partition(SLOT)  # 3.5 MB joined as bytes, not copied through Jinja
    return b"".join(
        (head.encode("utf-8"), _mermaid_bytes(), tail.encode("utf-8"))
    )  # one copy of 3.6 MB, not two


@per_lesson
def _body(markdown_text: str, bench_json: str, labels_json: str) -> tuple[str, int]:
    """The page body's HTML and its number of mermaid figures. Kept per input: a build renders
    each page twice (early for the checks, final with the bench) and the bundles render it again."""
    labels = json.loads(labels_json)
    md, failures = _markdown()
    failures.clear()
    tokens = parse_by_section(md, markdown_text, lines=False)
    ids = [t.attrs.get("id") for t in tokens if t.type == "heading_open"]
    if len(set(ids)) < len(ids):  # the anchors' numbering of repeated headings spans sections
        tokens = md.parse(markdown_text)
    _mark_callout(tokens)
    _rewrite_links(tokens, labels["permalink"])
    try:
        figures = C.charts(json.loads(bench_json), labels)
    except C.ChartError as exc:
        raise HtmlError(f"lesson.html: {exc}") from exc
    tokens = _sections(_place_charts(tokens, figures))
    body = md.renderer.render(tokens, md.options, {})
    if failures:
        raise HtmlError(
            "lesson.html: formulas that do not convert to MathML:\n" + "\n".join(failures)
        )
    return body, sum(1 for t in tokens if t.type == "fence" and _lang(t) == "mermaid")


def pack_page(ctx, env: jinja2.Environment, markdown_text: str, bench: dict | None) -> bytes:
    """lesson.html of one pack (ctx: render.LessonContext), its errors named by the pack."""
    try:
        return lesson_html(
            markdown_text,
            lang=ctx.locale,
            title=ctx.heading,
            env=env,
            bench=bench,
            labels=page_labels(ctx.ui, ctx.text),
            mermaid_src=f"../{MERMAID_FILE}" if ctx.bundle else None,
        )
    except HtmlError as exc:
        raise HtmlError(f"{ctx.lesson.spec.id}-{ctx.locale}-{ctx.edition}/{exc}") from exc


def page_labels(ui, text) -> dict[str, str]:
    """The page's labels from the locale (`pack.page`), English for any key it lacks (until the
    locale files carry them), and the lesson's table titles."""
    page = getattr(ui.pack, "page", None)
    labels = {
        **ENGLISH_LABELS,
        **(page.model_dump() if hasattr(page, "model_dump") else dict(page or {})),
    }
    measured = getattr(text, "measured", None)
    labels.update(
        {
            f"table:{key}": value
            for key, value in dict(getattr(measured, "tables", None) or {}).items()
        }
    )
    labels.update(
        {
            f"param:{key}": value
            for key, value in dict(getattr(measured, "axes", None) or {}).items()
        }
    )
    return labels


# --- markdown ----------------------------------------------------------------------------------


@per_build
def _markdown() -> tuple[MarkdownIt, list[str]]:
    """The page parser, one per build (it keeps no state between pages), and the list where it
    notes the formulas of the page being rendered that do not convert (_body empties it first)."""
    failures: list[str] = []
    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight}).enable(
        ["table", "strikethrough"]
    )
    dollarmath_plugin(
        md,
        double_inline=True,
        allow_labels=False,
        renderer=lambda latex, options: _math(latex, options["display_mode"], failures),
    )
    anchors_plugin(
        md, min_level=1, max_level=6, slug_func=heading_slug, permalink=True, permalinkSymbol="#"
    )
    default_fence = md.renderer.rules["fence"]

    def fence(self, tokens, idx, options, env):
        token = tokens[idx]
        if _lang(token) == "mermaid":
            return f'<pre class="mermaid">{escape(token.content.strip(), quote=False)}</pre>\n'
        return default_fence(tokens, idx, options, env)

    md.add_render_rule("fence", fence)
    md.add_render_rule("softbreak", _softbreak)
    md.renderer.renderInline = _kept_inline(md.renderer.renderInline, failures)
    return md, failures


INLINE_KEPT = 4096


def _kept_inline(render_inline, failures: list[str]):
    """renderInline, kept per list of inline tokens: the pages of a lesson share most of their parsed
    tokens (parse_by_section), and an inline's HTML depends on its tokens alone. Kept by identity
    (the list is held with its HTML); not kept where a formula failed, so that each page reports it."""
    kept: dict[int, tuple[list, str]] = {}

    def render(tokens, options, env):
        found = kept.get(id(tokens))
        if found is not None and found[0] is tokens:
            return found[1]
        failed = len(failures)
        html = render_inline(tokens, options, env)
        if len(failures) == failed:
            if len(kept) >= INLINE_KEPT:
                kept.clear()
            kept[id(tokens)] = (tokens, html)
        return html

    return render


def _softbreak(self, tokens, idx, options, env) -> str:
    """A line break inside a paragraph is a space, except between two CJK characters, where
    browsers would show it as a gap (Chinese text has no spaces between words)."""
    before = tokens[idx - 1].content[-1:] if idx > 0 and tokens[idx - 1].type == "text" else ""
    after = (
        tokens[idx + 1].content[:1]
        if idx + 1 < len(tokens) and tokens[idx + 1].type == "text"
        else ""
    )
    return "" if _wide(before) and _wide(after) else "\n"


def _wide(char: str) -> bool:
    return bool(char) and unicodedata.east_asian_width(char) in ("W", "F")


def _lang(token: Token) -> str:
    return token.info.split()[0] if token.info.split() else ""


def _math(latex: str, display: bool, failures: list[str]) -> str:
    """MathML for one formula. The plugin wraps it in span.math.inline / div.math.block."""
    html, failure = converted_formula(latex, display)
    if failure:
        failures.append(failure)
    return html


@per_build
def converted_formula(latex: str, display: bool) -> tuple[str, str | None]:
    """(HTML, the failure to report or None) for one formula; kept per formula: every pack of a
    lesson, both editions and the bundle, shows the same ones."""
    shown = f"$${latex}$$" if display else f"${latex}$"
    try:
        mathml = latex_to_mathml(latex.strip(), display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises many kinds; each one is a formula to fix
        return escape(shown), f"  {shown}: {type(exc).__name__} {exc}".rstrip()
    mathml = MTEXT.sub(
        lambda m: TEXT_ESCAPE.sub(
            lambda e: "&amp;" if e.group(1).startswith("&") else e.group(1), m.group(0)
        ),
        mathml,
    )
    unknown = re.findall(r"\\[A-Za-z]+", mathml)
    if unknown:
        return mathml, f"  {shown}: unsupported command {', '.join(sorted(set(unknown)))}"
    return mathml, None


# latex2mathml keeps a text-mode escape inside \text{...} as it is (`\text{BLOCK\_M}` shows
# "BLOCK\_M"): the character without its backslash, as TeX prints it.
MTEXT = re.compile(r"<mtext>.*?</mtext>", re.S)
TEXT_ESCAPE = re.compile(r"\\(&amp;|&(?!#?\w+;)|[_%#$}{])")


def _highlight(code: str, lang: str, attrs: str) -> str:
    return _highlighted(code, lang)


@per_build
def _highlighted(code: str, lang: str) -> str:
    """Highlighted HTML of one code block, kept per block (the same code is in many pages)."""
    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it escapes it as plain code
    body = highlight(code, lexer, HtmlFormatter(nowrap=True))
    return f'<pre class="highlight"><code class="language-{escape(lang)}">{body}</code></pre>\n'


@per_build
def _highlight_css() -> str:
    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style="github-dark").get_style_defs(".highlight")
    strip = re.compile(
        r"^(pre \{|td\.linenos|span\.linenos|\.highlight \.hll|\.highlight  \{|\.highlight \{).*$\n?",
        re.M,
    )
    return (
        strip.sub("", light)
        + "@media (prefers-color-scheme: dark) {\n"
        + strip.sub("", dark)
        + "}\n"
        + "@media print {\n"
        + strip.sub("", light)
        + "}\n"
    )


def _mark_callout(tokens: list[Token]) -> None:
    """The edition note: the first top-level blockquote after the title."""
    seen_title = False
    for index, token in enumerate(tokens):
        if token.type == "heading_close" and token.tag == "h1":
            seen_title = True
        elif seen_title and token.type == "blockquote_open" and token.level == 0:
            marked = tokens[index] = token.copy(attrs=dict(token.attrs))  # parsed tokens are shared
            marked.attrSet("class", "callout")
            marked.attrSet("role", "note")
            return


def _rewrite_links(tokens: list[Token], permalink: str) -> None:
    """Another pack's lesson.md is its lesson.html here; heading anchors get an accessible name.
    The links changed are copies (parsed tokens are shared between pages)."""
    for index, token in enumerate(tokens):
        if not any(child.type == "link_open" for child in token.children or []):
            continue
        children = [
            child.copy(attrs=dict(child.attrs)) if child.type == "link_open" else child
            for child in token.children
        ]
        tokens[index] = token.copy(children=children)
        for child in children:
            if child.type != "link_open":
                continue
            if child.attrGet("class") == "header-anchor":
                child.attrSet("aria-label", permalink)
                continue
            href = str(child.attrGet("href") or "")
            found = LESSON_LINK.match(href)
            if found and not EXTERNAL.match(href):
                child.attrSet(
                    "href", f"{found.group('path') or ''}lesson.html{found.group('rest') or ''}"
                )


def _place_charts(tokens: list[Token], figures: list[tuple[str, str, str]]) -> list[Token]:
    """Each chart right after the table whose title paragraph names it, else at the end."""
    out = list(tokens)
    leftover = []
    for _, title, svg in figures:
        html = Token("html_block", "", 0, content=f'<figure class="chart">\n{svg}\n</figure>\n')
        at = _table_after(out, title)
        if at is None:
            leftover.append(html)
        else:
            out.insert(at, html)
    return out + leftover


def _table_after(tokens: list[Token], title: str) -> int | None:
    wanted = _plain(title)
    for i, token in enumerate(tokens):
        if token.type == "inline" and token.level == 1 and _plain(token.content) == wanted:
            for j in range(i + 1, len(tokens)):
                if tokens[j].type == "table_close":
                    return j + 1
                if tokens[j].type in ("heading_open", "paragraph_open"):
                    break
    return None


def _plain(text: str) -> str:
    return re.sub(r"[*_`\s]+", " ", text).strip(" :：")


def _sections(tokens: list[Token]) -> list[Token]:
    """One <section> per second-level heading, so hints and styles stay within their part."""
    out, open_ = [], False
    for token in tokens:
        if token.type == "heading_open" and token.tag == "h2" and token.level == 0:
            out.append(
                Token(
                    "html_block", "", 0, content=("</section>\n" if open_ else "") + "<section>\n"
                )
            )
            open_ = True
        out.append(token)
    if open_:
        out.append(Token("html_block", "", 0, content="</section>\n"))
    return out


# --- mermaid -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def mermaid_script() -> str:
    """The vendored mermaid with its licence, checked: pinned bytes, nothing that ends a script.
    Read once per process: the file is the package's own, pinned by its sha256."""
    import hashlib

    data = (VENDOR / "mermaid.min.js").read_bytes()
    if hashlib.sha256(data).hexdigest() != MERMAID_SHA256:
        raise HtmlError(
            f"{VENDOR / 'mermaid.min.js'}: not the pinned mermaid {MERMAID_VERSION} (sha256 differs)"
        )
    code = data.decode("utf-8")
    licence = (VENDOR / "LICENSE").read_text(encoding="utf-8").replace("*/", "* /")
    if re.search(r"</?script", code, re.I):
        raise HtmlError(f"{VENDOR / 'mermaid.min.js'}: contains a script tag; it cannot be inlined")
    # One raw U+0001 sits in a string literal; written as an escape it means the same to JavaScript,
    # and no pack file holds a control character (tests/test_control_chars.py).
    code = code.replace('="\x01"', '="\\x01"')
    if CONTROL.search(code):
        raise HtmlError(
            f"{VENDOR / 'mermaid.min.js'}: a raw control character at {CONTROL.search(code).start()}"
        )
    return f"/*! mermaid {MERMAID_VERSION} (https://github.com/mermaid-js/mermaid)\n{licence}*/\n{code}"


@per_build
def _mermaid_bytes() -> bytes:
    return constant_part(
        mermaid_script().strip("\n").encode("utf-8")
    )  # every page's zip entry reuses its deflate


def mermaid_file() -> bytes:
    """A course bundle's MERMAID_FILE: the same bytes as a page inlines (its deflate is reused too)."""
    return _mermaid_bytes() + b"\n"


def loads_shared_mermaid(page: bytes) -> bool:
    """Whether a bundle's page loads MERMAID_FILE (it has figures)."""
    return f'src="../{MERMAID_FILE}"'.encode() in page


def strip_vendored(page: bytes) -> bytes:
    """The page with the inlined mermaid replaced by one line: for golden copies, diffs and the
    leak scan (the vendored file is pinned by its sha256; it is not lesson material)."""
    script = _mermaid_bytes()
    note = (
        f"/* mermaid {MERMAID_VERSION} ({len(script)} bytes, sha256 {MERMAID_SHA256}) */".encode()
    )
    out, start = [], 0  # page.replace(script, note), without preparing a 3.5 MB search pattern
    at = find_part(page, script)
    while at >= 0:
        out += [page[start:at], note]
        start = at + len(script)
        at = find_part(page, script, start)
    out.append(page[start:])
    return b"".join(out)


# --- text of a page (leak scan, edition pairing) -----------------------------------------------

_MARKUP = re.compile(
    r"""<(?:!--.*?-->|[!?][^>]*>|(/?)([a-zA-Z][^\t\n\r\f />\x00]*)(?:[^>"']|"[^"]*"|'[^']*')*>)""",
    re.S,
)  # a comment, a declaration, or a start or end tag (group 1: "/", group 2: its name)
_RAW_END = {name: re.compile(rf"</{name}[\t\n\r\f />]", re.I) for name in ("script", "style")}


def page_text(page: bytes | str) -> str:
    """What a reader sees: text without tags, scripts or styles, entities decoded; line breaks
    where the page source has them (code keeps its lines), one line per table row. It reads a page
    as html.parser does (tests/test_html.py holds it to an HTMLParser on every golden page), a
    regular expression at a time: three times faster, and the leak scan reads every exercise page."""
    text = page.decode("utf-8", "replace") if isinstance(page, bytes) else page
    parts, position, row = [], 0, 0
    while True:
        markup = _MARKUP.search(text, position)
        end = markup.start() if markup else len(text)
        if end > position:
            chunk = unescape(text[position:end])
            parts.append(chunk.replace("\n", " | ") if row else chunk)
        if markup is None:
            break
        position = markup.end()
        closing, name = markup.group(1), (markup.group(2) or "").lower()
        if (
            name in _RAW_END and not closing
        ):  # a script's or a style's text is not shown: skip to its end tag
            close = _RAW_END[name].search(text, position)
            if close is None:
                break
            tag = _MARKUP.match(text, close.start())
            position = tag.end() if tag else close.end()
        elif name == "tr":
            row = max(row - 1, 0) if closing else row + 1
    return "".join(parts)
