from pathlib import Path

from generator.content.markdown import check_markdown, split_cells

DOC = """# Title

Intro with $x$ math.

## Exercise

```python nb-setup
import os
```

```python exercise
def f():
    return 1
```

Text after.

```python nb-check
check()
```

## End
"""


def test_split_gives_notebook_cells_and_lesson_md_from_one_parse():
    lesson_md, cells = split_cells(DOC)
    roles = [(c.kind, c.role) for c in cells]
    assert roles == [
        ("markdown", ""),
        ("markdown", ""),
        ("code", "setup"),
        ("code", "exercise"),
        ("markdown", ""),
        ("code", "check"),
        ("markdown", ""),
    ]
    assert cells[3].source == "def f():\n    return 1"
    assert (
        "nb-setup" not in lesson_md and "check()" not in lesson_md and "import os" not in lesson_md
    )
    assert "```python\ndef f():\n    return 1\n```" in lesson_md


def test_problems_found():
    bad = "# T\n\nopen $math here\n\n[x](#nowhere) [y](missing.py) [z](https://ok.example)\n\n```python\nnever closed\n"
    problems = check_markdown(bad, {"lesson.md"}, "lesson.md")
    assert "lesson.md:3: unbalanced $ math delimiters" in problems
    assert "lesson.md:5: link to a missing heading #nowhere" in problems
    assert "lesson.md:5: link to a file not in the pack: missing.py" in problems
    assert "lesson.md:7: code fence is never closed" in problems
    assert len(problems) == 4


def test_good_links_pass():
    good = "# Top part\n\nSee [top](#top-part) and [file](check.py) and $a$ and $$b$$.\n"
    assert check_markdown(good, {"check.py"}, "x.md") == []


TRICKY = """# Title

> a quote
# not a cut inside the quote? (it is: a heading ends the quote)

| a | b |
|---|---|
| 1 | 2 |
## After a table

- item
  continued
### After a list

````markdown
# not a heading: inside a fence
```python
## still inside
```
````

~~~
# inside a tilde fence
~~~

Setext
------

#not a heading (no space)
#
A paragraph
## interrupted by a heading
  ## indented two spaces: a heading, not a cut
"""


def _shape(tokens):
    return [
        (
            t.type,
            t.tag,
            t.map,
            t.content,
            t.info,
            t.level,
            [(c.type, c.content) for c in t.children or []],
        )
        for t in tokens
    ]


def test_parsing_by_section_gives_the_tokens_of_the_whole():
    from generator.content.markdown import parser_for, heading_sections, parse

    assert [first for first, _ in heading_sections(TRICKY)] == [
        0,
        3,
        8,
        12,
        29,
        31,
    ]  # the fenced "# ..." lines and the indented heading are not cuts
    assert _shape(parse(TRICKY)) == _shape(parser_for().parse(TRICKY))
    assert _shape(parse(TRICKY)) == _shape(parse(TRICKY))  # served from the kept sections
    with_reference = TRICKY + "\n[link][ref]\n\n## later\n\n[ref]: https://example.org\n"
    assert _shape(parse(with_reference)) == _shape(parser_for().parse(with_reference))
    real = Path(__file__).resolve().parent / "golden"
    for page in sorted(real.glob("*/lesson.md")):
        text = page.read_text(encoding="utf-8")
        assert _shape(parse(text)) == _shape(parser_for().parse(text)), page


INLINE_EDGES = """# Edges

An entity dollar &#36; and &dollar; and &#x24; here.

An escaped \\$ and a [link](missing.md) and ![an image](missing.png).

An autolink <ftp://example.org/x> and <http://example.org/a%24b> and <mailto:me@example.org>.

Code `a < b && c[0]` only, and <em>raw</em> text.

A reference-looking [bracket] alone; [y](#edges) [z](#nowhere).
"""


def _real_documents():
    root = Path(__file__).resolve().parent
    return (
        [TRICKY, INLINE_EDGES, DOC]
        + [p.read_text(encoding="utf-8") for p in sorted(root.glob("golden/*/lesson.md"))]
        + [p.read_text(encoding="utf-8") for p in sorted(root.glob("golden_quarto/*/*/lesson.qmd"))]
    )


def test_checking_the_blocks_finds_what_the_full_parse_finds():
    """check_markdown on parse_blocks (inline content parsed only where it can hold a problem)
    reports exactly what it reports on the full parse."""
    from generator.content.markdown import parse, parse_blocks

    for text in _real_documents():
        for files in (set(), {"lesson.md", "check.py", "missing.md"}):
            full = check_markdown(text, files, "x.md", parse(text))
            assert check_markdown(text, files, "x.md", parse_blocks(text)) == full
            assert check_markdown(text, files, "x.md") == full
    found = check_markdown(INLINE_EDGES, set(), "x.md")
    assert "x.md:3: unbalanced $ math delimiters" in found
    assert "x.md:7: link to a file not in the pack: ftp://example.org/x" in found
    assert "x.md:11: link to a missing heading #nowhere" in found


def test_inline_content_without_a_trigger_has_nothing_to_check():
    """The premise of parse_blocks: an inline token whose content INLINE_PROBLEM does not match
    has no link, no image and no $ in its text, in the full parse."""
    from generator.content.markdown import INLINE_PROBLEM, parser_for

    for text in _real_documents():
        for token in parser_for().parse(text):
            if token.type == "inline" and not INLINE_PROBLEM.search(token.content):
                assert not [
                    c
                    for c in token.children
                    if c.type in ("link_open", "image") or c.type == "text" and "$" in c.content
                ], token.content


def test_a_moved_token_copies_every_field():
    from generator.content.markdown import TOKEN_FIELDS, moved_token
    from markdown_it.token import Token

    token = Token(
        "fence",
        "code",
        0,
        attrs={"a": 1},
        map=[2, 5],
        level=1,
        children=[],
        content="x\n",
        markup="```",
        info="python",
        meta={"m": 1},
        block=True,
        hidden=True,
    )
    moved = moved_token(token, 10)
    assert moved.map == [12, 15] and token.map == [2, 5]
    assert all(
        getattr(moved, name) is getattr(token, name) for name in TOKEN_FIELDS if name != "map"
    )
