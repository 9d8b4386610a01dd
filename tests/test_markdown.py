from pathlib import Path

from generator.markdown import check_markdown, split_cells

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
    assert roles == [("markdown", ""), ("markdown", ""), ("code", "setup"), ("code", "exercise"),
                     ("markdown", ""), ("code", "check"), ("markdown", "")]
    assert cells[3].source == "def f():\n    return 1"
    assert "nb-setup" not in lesson_md and "check()" not in lesson_md and "import os" not in lesson_md
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
    return [(t.type, t.tag, t.map, t.content, t.info, t.level, [(c.type, c.content) for c in t.children or []])
            for t in tokens]


def test_parsing_by_section_gives_the_tokens_of_the_whole():
    from generator.markdown import _parser, _sections, parse
    assert [first for first, _ in _sections(TRICKY)] == [0, 3, 8, 12, 29, 31]   # the fenced "# ..." lines and the indented heading are not cuts
    assert _shape(parse(TRICKY)) == _shape(_parser().parse(TRICKY))
    assert _shape(parse(TRICKY)) == _shape(parse(TRICKY))   # served from the kept sections
    with_reference = TRICKY + "\n[link][ref]\n\n## later\n\n[ref]: https://example.org\n"
    assert _shape(parse(with_reference)) == _shape(_parser().parse(with_reference))
    real = Path(__file__).resolve().parent / "golden"
    for page in sorted(real.glob("*/lesson.md")):
        text = page.read_text(encoding="utf-8")
        assert _shape(parse(text)) == _shape(_parser().parse(text)), page
