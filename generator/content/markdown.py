"""Parse the rendered lesson Markdown: check it, and split it into notebook cells.

lesson.md and lesson.ipynb come from this one parse, so they cannot drift apart. Fenced code
whose info string carries a role becomes a code cell: ``python exercise`` (also shown in
lesson.md), ``python nb-setup`` and ``python nb-check`` (notebook only); ``markdown answer ID``
becomes a Markdown cell of its own, the answer place of rubric part ID (in lesson.md, its text).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from generator.files import memo

CELL_ROLES = {"exercise": "exercise", "nb-setup": "setup", "nb-check": "check", "answer": "answer"}
NOTEBOOK_ONLY = {"nb-setup", "nb-check"}
EXTERNAL = re.compile(r"^(https?:|mailto:)")
DIV_LINE = re.compile(
    r"^\s*:{3}"
)  # a pandoc fenced div (the Quarto pages' profile blocks and callouts)


@dataclass(frozen=True)
class Cell:
    kind: str  # "markdown" or "code"
    source: str
    role: str = ""  # tag of a code cell; "answer" for an answer place
    part: str = ""  # an answer place's rubric part


@lru_cache(maxsize=None)
def parser_for(html: bool = False, inline: bool = True) -> MarkdownIt:
    """One parser per setting: building one costs more than parsing a unit (parse() keeps no state).
    inline=False: the blocks only, each inline token's children left empty (parse_blocks)."""
    md = MarkdownIt("commonmark", {"html": html}).enable(["table", "strikethrough"])
    return md if inline else md.disable("inline")


def _role(token: Token) -> str:
    parts = token.info.split()
    return parts[1] if len(parts) > 1 and parts[1] in CELL_ROLES else ""


def unit_problems(text: str) -> list[tuple[int, str]]:
    """Problems in one piece of content Markdown, with the 0-based line inside the piece."""
    return list(_unit_problems(text))


@lru_cache(
    maxsize=8192
)  # pure, by text: a process that loads the content again checks only what changed
def _unit_problems(text: str) -> tuple[tuple[int, str], ...]:
    found = []
    tokens = parser_for(html=True).parse(text)
    lines = text.splitlines()
    code = {i for t in tokens if t.type in ("fence", "code_block") and t.map for i in range(*t.map)}
    found += [
        (
            i,
            "a line that starts with ':::' would open or close a block of the course's Quarto pages; "
            "reword it or put it in a code span",
        )
        for i, line in enumerate(lines)
        if i not in code and DIV_LINE.match(line)
    ]
    for token in tokens:
        line = token.map[0] if token.map else 0
        if token.type == "html_block":
            found.append((line, "raw HTML is not allowed in lesson text; use Markdown"))
        if token.type == "fence" and token.map:
            closing = lines[token.map[1] - 1].strip() if token.map[1] - 1 < len(lines) else ""
            if token.map[1] - token.map[0] < 2 or not closing.startswith(token.markup):
                found.append((line, "code fence is never closed"))
        if token.type == "inline":
            children = token.children or []
            span = lines[token.map[0] : token.map[1]] if token.map else [token.content]
            html = [c.content for c in children if c.type == "html_inline"]
            if html:
                found.append(
                    (
                        line + _first_line(span, html[0]),
                        "raw HTML is not allowed in lesson text; use Markdown",
                    )
                )
            dollars = sum(
                len(re.findall(r"(?<!\\)\$", c.content)) for c in children if c.type == "text"
            )
            if dollars % 2:
                found.append((line + _odd_dollar_line(span), "unbalanced $ math delimiters"))
            elif any(pandoc_refuses(c.content) for c in children if c.type == "text"):
                found.append(
                    (
                        line + _first_line(span, "$"),
                        "a $...$ span Quarto (pandoc) reads as dollar signs: "
                        "no space right after the opening $ or right before the closing one, no digit after it",
                    )
                )
    return tuple(found)


# pandoc's rule for inline TeX math: the opening $ has a non-space to its right, the closing $ a
# non-space to its left and no digit after it (`$x = $ NaN` is two dollar signs in a Quarto page)
def pandoc_refuses(text: str) -> bool:
    """Whether a $...$ pair of text (dollars taken two by two, $$ left alone) breaks pandoc's rule."""
    marks = [m.start() for m in re.finditer(r"(?<![\\$])\$(?!\$)", text)]
    for opening, closing in zip(marks[0::2], marks[1::2]):
        after = text[closing + 1 : closing + 2]
        if text[opening + 1].isspace() or text[closing - 1].isspace() or after.isdigit():
            return True
    return False


def _first_line(span: list[str], needle: str) -> int:
    return next((i for i, text in enumerate(span) if needle in text), 0)


def _odd_dollar_line(span: list[str]) -> int:
    """The line after which the count of $ stays odd: where the unclosed one opens."""
    count, opened = 0, 0
    for i, text in enumerate(span):
        before = count
        count += len(re.findall(r"(?<!\\)\$", text))
        if before % 2 == 0 and count % 2 == 1:
            opened = i
    return opened


def check_markdown(
    text: str, pack_files: set[str], name: str, tokens: list[Token] | None = None
) -> list[str]:
    """Problems in the rendered Markdown: unclosed fences, unbalanced math, dead links. tokens:
    parse(text) or parse_blocks(text) (the default)."""
    tokens = tokens if tokens is not None else parse_blocks(text)
    lines = text.splitlines()
    problems: list[str] = []
    anchors = {
        heading_slug(tokens[i + 1].content)
        for i, t in enumerate(tokens)
        if t.type == "heading_open"
    }
    for token in tokens:
        if token.type == "fence" and token.map:
            closing = lines[token.map[1] - 1].strip() if token.map[1] - 1 < len(lines) else ""
            if token.map[1] - token.map[0] < 2 or not closing.startswith(token.markup):
                problems.append(f"{name}:{token.map[0] + 1}: code fence is never closed")
            if token.info.strip() == "mermaid" and not token.content.strip():
                problems.append(f"{name}:{token.map[0] + 1}: empty mermaid figure")
        if token.type == "inline":
            problems += _inline_problems(token, anchors, pack_files, name)
    return problems


def _inline_problems(token: Token, anchors: set[str], pack_files: set[str], name: str) -> list[str]:
    line = token.map[0] + 1 if token.map else 0
    problems = []
    children = token.children or _children(token.content)
    dollars = sum(
        len(re.findall(r"(?<!\\)\$", child.content)) for child in children if child.type == "text"
    )
    if dollars % 2:
        problems.append(f"{name}:{line}: unbalanced $ math delimiters")
    for child in children:
        target = (
            child.attrs.get("href") or child.attrs.get("src")
            if child.type in ("link_open", "image")
            else None
        )
        if not target or EXTERNAL.match(str(target)):
            continue
        target = str(target)
        if target.startswith("#"):
            if target[1:] not in anchors:
                problems.append(f"{name}:{line}: link to a missing heading {target}")
        elif target.split("#")[0] not in pack_files:
            problems.append(f"{name}:{line}: link to a file not in the pack: {target}")
    return problems


def heading_slug(heading: str) -> str:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def parse(text: str) -> list[Token]:
    return parse_by_section(parser_for(), text)


def parse_blocks(text: str) -> list[Token]:
    """parse(text) without the inline tokens' children: the blocks are all that split_cells needs,
    and check_markdown parses the few inline contents that can hold a problem (_children). The
    inline parse is half of a parse, and most paragraphs have nothing to check."""
    if REFERENCE_LINE.search(
        text
    ):  # reference links reach across blocks: parsed whole, children too
        return parser_for().parse(text)
    return parse_by_section(parser_for(inline=False), text)


# What can put a $ into an inline's text or make a link or an image: a $ or a bracket, an entity,
# a URL autolink (its text is percent-decoded). Inline content without any of them has neither.
INLINE_PROBLEM = re.compile(r"[$\[]|&#?\w+;|<[A-Za-z][A-Za-z0-9+.\-]{1,31}:")


def _children(content: str) -> list[Token]:
    """The children of an inline token that parse_blocks left empty, where they can matter to
    check_markdown; none where INLINE_PROBLEM finds nothing."""
    if not INLINE_PROBLEM.search(content):
        return []
    kept = memo.table(
        "markdown.inline", lesson=True
    )  # inline content -> its children, as the full parse makes them
    found = kept.get(content)
    if found is None:
        found = kept[content] = (
            parser_for().parseInline(content)[0].children
        )  # the core rules on this content alone
    return found


HEADING_LINE = re.compile(r"#{1,6}(?:[ \t]|$)")
FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")
REFERENCE_LINE = re.compile(r"^ {0,3}\[(?:[^\]\\\n]|\\.)+\]:", re.M)


def parse_by_section(md: MarkdownIt, text: str, lines: bool = True) -> list[Token]:
    """md.parse(text), the same tokens, parsed a section at a time (cut before each heading line
    outside fenced code) with each section's tokens kept by its text: a lesson's four documents
    (two editions, alone and in the course bundle) share most of their sections, and the
    pure-Python parser is the build's largest cost. A document with link reference definitions
    (they reach across sections) is parsed whole. The tokens are shared: read them, do not change
    them. lines=False: the tokens' line numbers (map) are left within their section (no copies)."""
    if REFERENCE_LINE.search(text):
        return md.parse(text)
    tokens: list[Token] = []
    kept = memo.table(
        "markdown.sections", lesson=True
    )  # (parser, section[, first line]) -> its tokens
    for first, section in heading_sections(text):
        key = (id(md), section)
        found = kept.get(key)
        if found is None:
            found = kept[key] = md.parse(section)
        if first and lines:
            moved = kept.get(
                (id(md), section, first)
            )  # the same section at the same line: zip and bundle
            if moved is None:
                moved = kept[(id(md), section, first)] = [
                    moved_token(t, first) if t.map else t for t in found
                ]
            found = moved
        tokens += found
    return tokens


TOKEN_FIELDS = tuple(
    field.name for field in dataclasses.fields(Token)
)  # moved_token copies each (tests/test_markdown.py)


def moved_token(token: Token, lines: int) -> Token:
    """A shallow copy of token `lines` lines further down (Token.copy, through dataclasses.replace,
    took a twentieth of a build; a loop of setattr, three times these assignments)."""
    moved = Token.__new__(Token)
    moved.type, moved.tag, moved.nesting, moved.attrs = (
        token.type,
        token.tag,
        token.nesting,
        token.attrs,
    )
    moved.level, moved.children, moved.content, moved.markup = (
        token.level,
        token.children,
        token.content,
        token.markup,
    )
    moved.info, moved.meta, moved.block, moved.hidden = (
        token.info,
        token.meta,
        token.block,
        token.hidden,
    )
    moved.map = [token.map[0] + lines, token.map[1] + lines]
    return moved


def heading_sections(text: str) -> list[tuple[int, str]]:
    """text cut before each ATX heading that starts a line outside fenced code: (first line, text).
    Such a line ends every block before it (a paragraph, a list, a quote, a table), so each part
    parses as it does within the whole."""
    lines = text.splitlines(keepends=True)
    cuts, fence = [0], ""
    for number, line in enumerate(lines):
        opening = FENCE_LINE.match(line)
        if fence:
            if (
                opening
                and opening.group(1)[0] == fence[0]
                and len(opening.group(1)) >= len(fence)
                and not line.strip().lstrip(fence[0])
            ):
                fence = ""
        elif opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end() :]):
            fence = opening.group(1)
        elif number and HEADING_LINE.match(line):
            cuts.append(number)
    cuts.append(len(lines))
    return [(a, "".join(lines[a:b])) for a, b in zip(cuts, cuts[1:]) if a < b]


def split_cells(text: str, tokens: list[Token] | None = None) -> tuple[str, list[Cell]]:
    """lesson.md (without notebook-only fences) and the notebook's cells, from one parse."""
    lines = text.splitlines(keepends=True)
    tokens = [t for t in (tokens if tokens is not None else parse(text)) if t.level == 0 and t.map]
    cells: list[Cell] = []
    markdown_out: list[str] = []
    pending: list[str] = []
    cursor = 0

    def flush() -> None:
        source = "".join(pending).strip("\n")
        if source:
            cells.append(Cell("markdown", source))
        pending.clear()

    for token in tokens:
        start, end = token.map
        if token.type == "heading_open" and token.tag in ("h1", "h2"):
            pending.extend(lines[cursor:start])
            markdown_out.extend(lines[cursor:start])
            cursor = start
            flush()
        if token.type == "fence" and _role(token):
            before = lines[cursor:start]
            pending.extend(before)
            markdown_out.extend(before)
            flush()
            role = _role(token)
            if role == "answer":  # its text is Markdown: lesson.md shows it as it is
                cells.append(
                    Cell(
                        "markdown",
                        token.content.rstrip("\n"),
                        "answer",
                        (token.info.split() + [""])[2],
                    )
                )
                markdown_out.extend(lines[start + 1 : end - 1])
            else:
                cells.append(Cell("code", token.content.rstrip("\n"), CELL_ROLES[role]))
                if role not in NOTEBOOK_ONLY:
                    markdown_out.extend(["```python\n", *lines[start + 1 : end - 1], "```\n"])
                elif (
                    markdown_out
                    and markdown_out[-1] == "\n"
                    and end < len(lines)
                    and lines[end] == "\n"
                ):
                    end += 1
            cursor = end
    pending.extend(lines[cursor:])
    markdown_out.extend(lines[cursor:])
    flush()
    return "".join(markdown_out), cells
