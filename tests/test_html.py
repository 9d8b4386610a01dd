"""lesson.html and its charts, without a browser: math, anchors, links, hints, callout, CSP,
determinism, the leak scan's view of a page, and the packs that carry it."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from generator.render.charts import (
    ENGLISH_LABELS as CHART_LABELS,
    ChartError,
    bench_tables,
    charts,
    is_sweep,
)
from generator.render.html import (
    CSP,
    CSP_SHARED,
    ENGLISH_LABELS,
    MERMAID_FILE,
    HtmlError,
    MERMAID_VERSION,
    lesson_html,
    mermaid_script,
    page_text,
    strip_vendored,
)
from generator.gate.leaks import Fingerprint, normalise, scan_files
from generator.render.render import jinja_env

REPO = Path(__file__).resolve().parent.parent
ENV = jinja_env(REPO / "templates")
SVG = "{http://www.w3.org/2000/svg}"


def _rows(*rows):
    keys = ("name", "ms", "gbps", "vs_copy", "role", "param")
    return [dict(zip(keys, row)) for row in rows]


# The H200 numbers of docs/runs (session 6), in the bench's generic shape.
BENCH = {
    "device": "NVIDIA H200",
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
    "n": 268435456,
    "tables": {
        "blocks": _rows(
            ("device copy", 0.5059, 4245.2, 1.0, "copy", None),
            ("torch.relu", 0.5083, 4224.9, 0.995, "baseline", None),
            ("relu.py, BLOCK=256", 0.6422, 3343.7, 0.788, "kernel", 256),
            ("relu.py, BLOCK=1024", 0.5087, 4221.7, 0.994, "kernel", 1024),
            ("relu.py, BLOCK=4096", 0.5309, 4044.7, 0.953, "kernel", 4096),
        ),
        "fusion": _rows(
            ("device copy", 0.5086, 4222.0, 1.0, "copy", None),
            ("eager torch.relu(x + b)", 1.262, 1701.4, 0.40, "baseline", None),
            ("fused.py bias_relu, one Triton kernel", 0.508, 4226.8, 1.0, "kernel", None),
            ("eager F.dropout(torch.relu(x + b), 0.1)", 1.9936, 1077.2, 0.255, "baseline", None),
        ),
    },
    "values": {},
    "checks": {},
}
LABELS = {
    **ENGLISH_LABELS,
    "table:blocks": "ReLU over BLOCK sizes",
    "table:fusion": "Bias + ReLU, fused or not",
}

LESSON = """# Lesson 3: ReLU

> **Exercise edition**: fill the blank.

## Goal

ReLU is $\\max(x, 0)$ for each $x$; costs $5 and more are not math.

$$\\text{ReLU}(x) = \\max(x, 0)$$

- In a list: $$\\frac{1\\ \\text{FLOP}}{2 \\times 4\\ \\text{B}}$$

```python
def relu(x):
    return x if x > 0 else 0
```

```mermaid
flowchart LR
    A["load x"] --> B["store once"]
```

*Figure 3-1: one pass*

## Hints

<details>
<summary>Level 1 · concept</summary>

Think of `tl.maximum`.

</details>

<details>
<summary>Level 2 · direction</summary>

No Python `if`.

</details>

## Navigation

- [Lesson 4: bias](../lesson04_add_bias/lesson.md)
- [Lesson 2, its masks](../lesson02_add/lesson.md#masks)
- [Triton docs](https://triton-lang.org/lesson.md)
- [Up](#goal)
"""


def page(markdown=LESSON, bench=None, labels=LABELS, lang="en") -> str:
    return lesson_html(
        markdown, lang=lang, title="Lesson 3: ReLU <ok>", env=ENV, bench=bench, labels=labels
    ).decode("utf-8")


def body(html: str) -> str:
    return html[html.index("<main") : html.index("</main>")]


def test_every_formula_becomes_mathml_and_none_stays_text():
    html = page()
    main = body(html)
    # "$5 and more" has no closing $ on its line: the plugin leaves it, as GitHub does
    assert main.count("<math ") == 4
    assert main.count('display="block"') == 2
    assert "\\max" not in main and "\\frac" not in main
    assert "max</mo>" in main and "<mfrac>" in main


def test_text_mode_escapes_show_their_character():
    """`\\text{BLOCK\\_M}` reads BLOCK_M, as TeX prints it (the converter kept the backslash)."""
    main = body(page("# T\n\nReads $\\text{BLOCK\\_M} \\cdot \\text{a \\& b \\% c}$ elements.\n"))
    assert "<mtext>BLOCK_M</mtext>" in main and "\\" not in main
    assert "a&#x000A0;&amp;&#x000A0;b&#x000A0;%&#x000A0;c" in main


def test_formula_that_does_not_convert_is_an_error_naming_it():
    with pytest.raises(HtmlError, match=r"\$\\foo\{x\}\$: unsupported command \\foo"):
        page("# T\n\nText $\\foo{x}$ here.\n")
    with pytest.raises(HtmlError, match=r"\$\$\\frac\{1\}\{\$\$"):
        page("# T\n\n$$\\frac{1}{$$\n")


def test_headings_have_github_anchors_and_named_permalinks():
    main = body(page())
    assert (
        '<h2 id="goal">Goal <a class="header-anchor" href="#goal" aria-label="Link to this section">#</a></h2>'
        in main
    )
    assert 'id="lesson-3-relu"' in main
    assert main.count("<section>") == main.count("</section>") == 3


def test_links_to_lesson_md_point_to_lesson_html():
    main = body(page())
    assert 'href="../lesson04_add_bias/lesson.html"' in main
    assert 'href="../lesson02_add/lesson.html#masks"' in main
    assert 'href="https://triton-lang.org/lesson.md"' in main  # external links stay as they are
    assert 'href="#goal"' in main
    assert "lesson.md" not in main.replace("https://triton-lang.org/lesson.md", "")


def test_hints_stay_collapsible_details():
    main = body(page())
    assert main.count("<details>") == 2 and main.count("</details>") == 2
    assert "<summary>Level 1 · concept</summary>" in main
    assert "<details open" not in main  # opened on purpose, by the reader


def test_edition_note_is_a_callout():
    main = body(page())
    assert re.search(
        r'<blockquote class="callout" role="note">\s*<p><strong>Exercise edition</strong>', main
    )


def test_code_is_highlighted_and_mermaid_kept_for_the_page():
    html = page()
    main = body(html)
    assert '<pre class="highlight"><code class="language-python"><span class="k">def</span>' in main
    assert '<pre class="mermaid">flowchart LR\n    A["load x"] --&gt; B["store once"]</pre>' in main
    assert ".highlight .k" in html and "prefers-color-scheme: dark" in html


def test_page_head_lang_title_and_csp():
    html = page(lang="zh-CN")
    assert html.startswith('<!DOCTYPE html>\n<html lang="zh-CN" data-figures="pending">')
    assert "<title>Lesson 3: ReLU &lt;ok&gt;</title>" in html
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html.replace(
        "&#39;", "'"
    )
    assert (
        CSP
        == "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
    )


def test_nothing_in_the_page_is_fetched():
    html = strip_vendored(
        page(bench=BENCH).encode()
    ).decode()  # the vendored mermaid is checked by sha256
    assert "<link" not in html and "@import" not in html and "url(" not in html
    for attribute in re.findall(r"\b(?:src|srcset|poster|data|href)=\"([^\"#][^\"]*)\"", html):
        if attribute.startswith(("https:", "../")):  # ordinary links, followed only when clicked
            continue
        assert attribute.startswith("data:"), attribute


def test_mermaid_is_inlined_once_with_its_licence_and_only_when_needed():
    html = page()
    assert html.count("<script>") == 2
    assert (
        f"/*! mermaid {MERMAID_VERSION}" in html
        and "Copyright (c) 2014 - 2022 Knut Sveidqvist" in html
    )
    assert mermaid_script() in html
    plain = page("# T\n\nNo figure, $x$.\n")
    assert "<script" not in plain and "data-figures" not in plain


def test_a_bundle_page_loads_the_bundles_one_mermaid():
    """A course bundle's page: the shared copy beside the lesson folders, allowed by 'self' alone."""
    shared = lesson_html(
        LESSON,
        lang="en",
        title="t",
        env=ENV,
        bench=None,
        labels=LABELS,
        mermaid_src=f"../{MERMAID_FILE}",
    ).decode()
    assert shared.count("<script") == 2 and f'<script src="../{MERMAID_FILE}"></script>' in shared
    assert mermaid_script()[:200] not in shared and 'data-figures="pending"' in shared
    assert f'content="{CSP_SHARED}"' in shared.replace("&#39;", "'")
    assert CSP_SHARED == CSP.replace("script-src ", "script-src 'self' ")
    assert (
        strip_vendored(page().encode()).decode().replace(CSP, CSP_SHARED) != shared
    )  # inlined there
    plain = lesson_html(
        "# T\n\nNo figure, $x$.\n",
        lang="en",
        title="t",
        env=ENV,
        bench=None,
        labels=LABELS,
        mermaid_src=f"../{MERMAID_FILE}",
    ).decode()
    assert "<script" not in plain and f'content="{CSP}"' in plain.replace("&#39;", "'")


def test_same_input_same_bytes():
    again = json.loads(
        json.dumps(BENCH, sort_keys=True)
    )  # as read back from the verification cache
    reordered = {**again, "tables": dict(reversed(list(again["tables"].items())))}
    first = lesson_html(LESSON, lang="en", title="t", env=ENV, bench=BENCH, labels=LABELS)
    assert first == lesson_html(
        LESSON, lang="en", title="t", env=ENV, bench=reordered, labels=LABELS
    )
    assert first == lesson_html(
        LESSON, lang="en", title="t", env=ENV, bench=copy.deepcopy(BENCH), labels=LABELS
    )


def test_labels_are_required():
    with pytest.raises(HtmlError, match="labels missing: chart_copy"):
        page(labels={k: v for k, v in LABELS.items() if k != "chart_copy"})


def test_cjk_line_breaks_do_not_become_spaces():
    main = body(
        page("# 标题\n\n逐元素运算在 Triton 里是\n无分支的，见\nTriton 文档。\n", lang="zh-CN")
    )
    assert "里是无分支的，见\nTriton 文档" in main


def test_page_text_is_what_a_reader_sees():
    html = page()
    text = page_text(html)
    assert 'A["load x"] --> B["store once"]' in text
    assert "def relu(x):\n    return x if x > 0 else 0" in text
    assert "mermaid.initialize" not in text and ".highlight" not in text


def test_leak_scan_reads_escaped_and_highlighted_answers_in_a_page():
    secret = "tl.where(xv > 0.0, xv, 0.0)"
    html = page(f"# T\n\n```python\nout = {secret}\n```\n").encode()
    assert secret.encode() not in html  # escaped and split into highlighting spans
    prints = [Fingerprint("questions.q1.answer", normalise(secret))]
    found = scan_files({"lesson.html": html}, prints, "pack")
    assert found == [
        "pack/lesson.html (text): contains answer-only material from questions.q1.answer"
    ]


# --- charts ------------------------------------------------------------------------------------


def _svg(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_sweep_table_is_a_line_chart_with_copy_and_baseline_lines():
    (table_id, title, svg), _ = charts(BENCH, LABELS)
    assert (table_id, title) == ("blocks", "ReLU over BLOCK sizes")
    root = _svg(svg)
    assert root.tag == SVG + "svg"
    texts = [t.text for t in root.iter(SVG + "text")]
    assert texts[0] == "ReLU over BLOCK sizes"
    assert "measured on NVIDIA H200 · torch 2.11.0+cu130 · triton 3.6.0" in texts
    assert "NVIDIA H200" in root.find(SVG + "title").text
    assert ["256", "1024", "4096"] == [t for t in texts if t in ("256", "1024", "4096")]
    assert CHART_LABELS["chart_block"] in texts and CHART_LABELS["chart_bandwidth"] in texts
    assert (
        "device copy: 4245 GB/s" in texts
        and "torch.relu: 4225 GB/s" in texts
        and "relu.py" in texts
    )
    assert len(root.findall(SVG + "polyline")) == 1 and len(root.findall(SVG + "circle")) == 3 + 1
    xs = [float(c.get("cx")) for c in root.findall(SVG + "circle")][:3]
    assert xs[1] - xs[0] == pytest.approx(
        xs[2] - xs[1]
    )  # log2 axis: 256 -> 1024 -> 4096 evenly spaced


def test_other_tables_are_bars_with_the_copy_marked():
    _, (table_id, title, svg) = charts(BENCH, LABELS)
    root = _svg(svg)
    assert table_id == "fusion" and title == "Bias + ReLU, fused or not"
    assert len(root.findall(SVG + "rect")) == 4
    texts = [t.text for t in root.iter(SVG + "text")]
    assert (
        "device copy" in texts
        and "eager F.dropout(torch.relu(x + b), 0.1)" in texts
        and "1077" in texts
    )
    assert any(line.get("stroke-dasharray") for line in root.findall(SVG + "line"))


def test_localized_chart_labels_and_wrapped_long_titles():
    labels = {
        **LABELS,
        "chart_bandwidth": "带宽（GB/s）",
        "chart_copy": "设备内拷贝",
        "chart_subtitle": "测于 {device}",
        "table:fusion": "融合：" + "加偏置、ReLU 与 dropout，" * 6,
    }
    svg = charts(BENCH, labels)[1][2]
    root = _svg(svg)
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "带宽（GB/s）" in texts and "设备内拷贝" in texts and "测于 NVIDIA H200" in texts
    title = [t.text for t in root.iter(SVG + "text") if t.get("font-weight") == "600"]
    assert len(title) >= 2 and "".join(title).replace(" ", "") == labels["table:fusion"].replace(
        " ", ""
    )


def test_no_chart_where_nothing_was_measured():
    assert charts(None, LABELS) == [] and charts({}, LABELS) == []
    assert 'class="chart"' not in page(bench=None) + page(bench={"device": "x", "tables": {}})


def test_charts_follow_their_tables_in_the_page():
    measured = (
        LESSON
        + "\n## Measured\n\n**ReLU over BLOCK sizes**\n\n| | ms |\n|---|---|\n| a | 1 |\n\nAfter.\n"
    )
    main = body(page(measured, bench=BENCH))
    table = main.index("</table>")
    first_chart = main.index('<figure class="chart">')
    assert table < first_chart < main.index("<p>After.</p>")
    assert (
        main.count('<figure class="chart">') == 2
    )  # the fusion table has no title here: at the end


def test_chart_bytes_are_deterministic_and_charts_need_their_labels():
    assert charts(BENCH, LABELS) == charts(copy.deepcopy(BENCH), LABELS)
    with pytest.raises(ChartError, match="chart_block"):
        charts(BENCH, {k: v for k, v in LABELS.items() if k != "chart_block"})


def test_bench_rows_are_checked():
    bad = {"device": "x", "tables": {"t": [{"name": "a", "gbps": 1.0, "role": "fastest"}]}}
    with pytest.raises(ChartError, match="unknown role 'fastest'"):
        bench_tables(bad)
    with pytest.raises(ChartError, match="row 1"):
        bench_tables({"tables": {"t": [{"name": "a"}]}})
    rows = bench_tables(BENCH)
    assert is_sweep(rows[0][1]) and not is_sweep(rows[1][1])


# --- in the packs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered():
    from tests.golden_update import real_course

    return real_course()[1]


def _formulas(markdown: str) -> int:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    dollarmath_plugin(md, double_inline=True, allow_labels=False)
    count = 0
    for token in md.parse(markdown):
        count += token.type.startswith("math_block")
        count += sum(child.type.startswith("math_inline") for child in token.children or [])
    return count


def test_every_pack_has_its_page_with_all_formulas(rendered):
    from generator.render.render import finalize_pack

    for editions in rendered.values():
        for ctx, pack in editions.values():
            final = finalize_pack(ctx, ENV, pack, None)
            html = final.files["lesson.html"].decode()
            markdown = final.files["lesson.md"].decode()
            assert f'<html lang="{ctx.locale}"' in html
            assert html.count("<math ") == _formulas(markdown) > 0
            assert html.count('<pre class="mermaid">') == markdown.count("```mermaid")
            assert '<figure class="chart">' not in html  # nothing was measured
            assert json.loads(final.files["manifest.json"])["files"]["lesson.html"]


def test_both_editions_of_a_lesson_draw_the_same_figures(rendered):
    """What lets the browser test load the answer pages and only one exercise page per language."""
    mermaid = re.compile(r'<pre class="mermaid">(.*?)</pre>', re.S)
    for editions in rendered.values():
        pages = {
            edition: pack.files["lesson.html"].decode() for edition, (ctx, pack) in editions.items()
        }
        assert mermaid.findall(pages["exercise"]) == mermaid.findall(pages["answer"]) != []


def test_answer_page_charts_the_bench_and_the_exercise_page_does_not(rendered):
    from generator.render.render import finalize_pack

    editions = rendered[("lesson03_relu", "en")]
    bench = {
        k: v for k, v in BENCH.items() if k != "values"
    }  # no values: the text keeps its markers
    verification = {
        "runner_label": "CUDA",
        "device": "NVIDIA H200",
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "date": "2026-11-29",
        "passed": True,
        "bench": bench,
    }
    (ctx_a, answer), (ctx_e, exercise) = editions["answer"], editions["exercise"]
    answer_page = finalize_pack(ctx_a, ENV, answer, verification).files["lesson.html"].decode()
    assert (
        answer_page.count('<figure class="chart">') == 2
        and "measured on NVIDIA H200" in answer_page
    )
    exercise_page = finalize_pack(ctx_e, ENV, exercise, verification).files["lesson.html"].decode()
    assert '<figure class="chart">' not in exercise_page


def test_page_is_not_part_of_the_verified_files(rendered):
    ctx, pack = next(iter(rendered.values()))["answer"]
    assert "lesson.html" in pack.files and "lesson.html" not in pack.verified_files()


def test_the_answer_notebook_holds_the_measured_values_and_section(rendered):
    """finalize_pack builds the notebook from the rendered cells: each [[measured:NAME]] filled, and
    the measured tables as the last cell, as in lesson.md."""
    from generator.render.render import finalize_pack

    ctx, answer = rendered[("lesson03_relu", "en")]["answer"]
    names = sorted(
        set(re.findall(r"\[\[measured:(\w+)\]\]", "".join(c.source for c in answer.cells)))
    )
    assert names
    values = {name: f"<{name}>" for name in names}
    verification = {
        "runner_label": "CUDA",
        "device": "NVIDIA H200",
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "date": "2026-11-29",
        "passed": True,
        "bench": {**BENCH, "values": values},
    }
    final = finalize_pack(ctx, ENV, answer, verification)
    notebook = json.loads(final.files["lesson.ipynb"])
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    assert not any("[[measured:" in source for source in sources)
    assert all(any(value in source for source in sources) for value in values.values())
    last = notebook["cells"][-1]
    assert last["id"].endswith("-measured") and last["cell_type"] == "markdown"
    assert sources[-1].startswith("## ") and sources[-1] in final.files["lesson.md"].decode()
    assert [c["id"] for c in notebook["cells"][:-1]] == [
        c["id"] for c in json.loads(answer.files["lesson.ipynb"])["cells"]
    ]


def _reference_text(page: str) -> str:
    """page_text as html.parser reads a page (what page_text replaced, three times slower)."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts, self.skip, self.row = [], 0, 0

        def handle_starttag(self, tag, attrs):
            if tag in ("script", "style"):
                self.skip += 1
            elif tag == "tr":
                self.row += 1

        def handle_endtag(self, tag):
            if tag in ("script", "style") and self.skip:
                self.skip -= 1
            elif tag == "tr" and self.row:
                self.row -= 1

        def handle_data(self, data):
            if not self.skip:
                self.parts.append(data.replace("\n", " | ") if self.row else data)

    parser = Text()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


PAGE_PIECES = [
    "<p>a &lt; b &amp;&amp; c &gt; d &#x41;&#66; &nbsp;x &amp</p>",
    "<table><tr><td>a\nb</td><td>c</td></tr>\n<tr><td>d</td></tr></table>after\nline",
    "<!-- comment <p>x</p> --><p>y</p><!doctype html><?pi x?>",
    "text < 3 and 5 > 2 <b>bold</b> a<1",
    '<script>if (a < b && c > d) {"</p>"}</script>visible<style>.x>y{}</style>ok',
    '<a title="x>y" href=\'a>b\'>link</a> <img alt="1 > 0"/>',
    '<SCRIPT type="x">var s = "<b>";</SCRIPT >after',
    "<tr><td>x</td>\n<td>y</td>",
    "&unknown; &#99999999; &#0; &amp;lt;",
]


def test_page_text_reads_a_page_as_html_parser_does(rendered):
    pages = [*PAGE_PIECES, page()]
    pages += [
        strip_vendored(path.read_bytes()).decode()
        for path in sorted((REPO / "tests" / "golden").rglob("*.html"))
    ]
    pages += [
        pack.files["lesson.html"].decode()
        for editions in rendered.values()
        for _, pack in editions.values()
    ]
    assert len(pages) > 20
    for text in pages:
        assert page_text(text) == _reference_text(text), text[:200]


def test_pages_that_share_sections_render_them_as_alone():
    """An inline's HTML is kept per parsed tokens (the pages of a lesson share them): a page is the
    same whether its sections were rendered before or not, and a formula that fails is reported by
    every page that shows it."""
    from generator.files.memo import build_memo

    other = (
        LESSON.replace("# Lesson 3", "# Lesson 3, the other edition", 1) + "\nOne more $y$ line.\n"
    )
    with build_memo():
        shared = [page(), page(other)]
    for text, expected in ((LESSON, shared[0]), (other, shared[1])):
        with build_memo():  # a parser and its kept HTML made anew: nothing rendered before
            assert page(text) == expected
    bad = "# T\n\nText $\\foo{x}$ here.\n\n## Next\n\nMore.\n"
    for text in (bad, bad.replace("More.", "Other.")):
        with pytest.raises(HtmlError, match=r"unsupported command \\foo"):
            page(text)
