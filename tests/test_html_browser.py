"""lesson.html in real browsers: the system's headless Chromium, driven by Selenium, and its
headless Firefox (firefox-esr), driven through WebDriver BiDi (tests/firefox.py; no driver).

Pages are loaded from the test run's unzipped packs (conftest's `packs`; which ones: LOADED
below): every formula is MathML, every figure an SVG with its labels, no console error, no request
leaving the page (a course bundle's page: none but the bundle's one mermaid); the first lesson's
exercise page in each language is loaded with the network switched off. Firefox loads a page of
an exercise and of an answer bundle (their mermaid shared, from file://) and a single-lesson page
(its mermaid inlined), with no network at all. With COURSEPACK_SCREENSHOTS=1, screenshots of every
page (light, dark, print) go to build/screenshots/ for review.
Skipped, with the reason, where a browser is missing; under CI=true that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from generator.render.html import MERMAID_FILE, lesson_html
from tests import firefox
from tests.chromium import (
    missing,
    new_driver,
    requests_sent,
    screenshot,
    set_offline,
    wait_for_figures,
)
from tests.golden_update import golden_names
from tests.test_html import BENCH, ENV, LABELS, LESSON, _formulas

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parent.parent
SHOTS = REPO / "build" / "screenshots"


PACKS = golden_names()  # every lesson pack (tests/test_golden.py holds them to the content)
FIRST_LESSON = PACKS[0].split("-")[0]
# A lesson's figures and formulas are the same in both editions (tests/test_html.py checks each
# page's HTML, formulas and figure sources without a browser, and that both editions draw the same
# figures): every answer page is loaded, and one exercise page, the first lesson's in the last
# language, with the network switched off (every page is checked to send no request).
# Dark and print come from the page template, the same for every pack: the first lesson's answer
# page in the first language goes through them. COURSEPACK_SCREENSHOTS=1 loads every page, in each.
OFFLINE_PAGES = {
    [name for name in PACKS if name.startswith(FIRST_LESSON) and name.endswith("-exercise")][-1]
}
SCHEME_PAGES = {
    [name for name in PACKS if name.startswith(FIRST_LESSON) and name.endswith("-answer")][0]
}
LOADED = (
    PACKS
    if os.environ.get("COURSEPACK_SCREENSHOTS") == "1"
    else [name for name in PACKS if name.endswith("-answer") or name in OFFLINE_PAGES]
)
LABEL = re.compile(r'\["([^"]+)"\]')


def _require_browser(reason: str | None) -> None:
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    _require_browser(missing())
    driver = new_driver()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def firefox_browser():
    _require_browser(firefox.missing())
    browser = firefox.Firefox()
    yield browser
    browser.quit()


def _load(driver, page: Path) -> tuple[str, list[str]]:
    requests_sent(driver)  # forget what came before
    driver.get_log("browser")
    driver.get(page.as_uri())
    return wait_for_figures(driver), requests_sent(driver)


def _left_the_page(urls: list[str], page: Path) -> list[str]:
    """Requests to anything but the page itself, data: and, for a course bundle's page, the
    bundle's one mermaid (MERMAID_FILE beside the lesson folders)."""
    shared = (page.parent.parent / MERMAID_FILE).as_uri()
    return [
        url for url in urls if url not in (page.as_uri(), shared) and not url.startswith("data:")
    ]


def _figures_and_formulas(browser, markdown: str) -> int:
    """Every formula is MathML and no $ is left as text; every figure is an SVG with its labels.
    Returns the number of figures. (The same in Chromium and Firefox: their execute_script agree.)"""
    assert (
        browser.execute_script("return document.querySelectorAll('main math').length")
        == _formulas(markdown)
        > 0
    )
    assert _dollar_text(browser) == []
    sources = re.findall(r"```mermaid\n(.*?)```", markdown, re.S)
    figures = browser.execute_script(
        "return [...document.querySelectorAll('pre.mermaid')].map(p => { const s = p.querySelector('svg');"
        " return s ? s.textContent : null; })"
    )
    assert len(figures) == len(sources) > 0
    for source, text in zip(sources, figures):
        assert text is not None, "a figure was not drawn"
        flat = re.sub(r"\s+", "", text)
        for label in LABEL.findall(source):
            assert re.sub(r"\s+", "", label) in flat, f"figure label {label!r} missing from its SVG"
    return len(figures)


def _severe(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _dollar_text(driver) -> list[str]:
    """Text outside code, scripts and figures that still holds a $: a formula left as text."""
    return driver.execute_script("""
        const found = [];
        const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
          const node = walker.currentNode;
          if (node.parentElement.closest('pre, code, script, style, svg, math')) continue;
          if (node.textContent.includes('$')) found.push(node.textContent);
        }
        return found;""")


def _schemes(driver, page: Path, name: str) -> None:
    """The page (loaded in light) printed, then in dark: figures finish in each. Print is the loaded
    page printed, so it is not loaded again; dark is chosen when the page loads, so it is.
    Screenshots of each go to build/screenshots/ for review when COURSEPACK_SCREENSHOTS=1."""
    shots = os.environ.get("COURSEPACK_SCREENSHOTS") == "1"
    drawn = "return document.querySelectorAll('pre.mermaid svg').length"
    figures = driver.execute_script(drawn)
    if shots:
        screenshot(driver, SHOTS / f"{name}-light.png")
    _emulate(driver, media="print", dark=False)
    assert driver.execute_script(drawn) == figures and _severe(driver) == []
    if shots:
        screenshot(driver, SHOTS / f"{name}-print.png")
    _emulate(driver, media="", dark=True)
    driver.get(page.as_uri())
    assert wait_for_figures(driver) in ("done", "")
    assert driver.execute_script(drawn) == figures and _severe(driver) == []
    if shots:
        screenshot(driver, SHOTS / f"{name}-dark.png")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})


def _emulate(driver, media: str, dark: bool) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {
            "media": media,
            "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}],
        },
    )


@pytest.mark.parametrize("name", LOADED)
def test_page_renders_offline_ready(browser, packs, name):
    """OFFLINE_PAGES are loaded with the network switched off (DevTools' emulation)."""
    folder = packs[name]
    page = folder / "lesson.html"
    markdown = (folder / "lesson.md").read_text(encoding="utf-8")
    set_offline(browser, name in OFFLINE_PAGES)
    try:
        state, urls = _load(browser, page)
    finally:
        set_offline(browser, False)
    assert state == "done", f"figures: {state}; console: {_severe(browser)}"
    assert (
        browser.execute_script("return document.documentElement.lang")
        == name.split("-", 1)[1].rsplit("-", 1)[0]
    )
    assert browser.execute_script("return document.title") == markdown.splitlines()[0].lstrip("# ")

    _figures_and_formulas(browser, markdown)
    assert browser.execute_script("return document.querySelector('blockquote.callout') !== null")
    assert (
        browser.execute_script("return document.querySelectorAll('pre.highlight span.k').length")
        > 0
    )
    assert _severe(browser) == []
    assert _left_the_page(urls, page) == []
    if name in SCHEME_PAGES or os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        _schemes(browser, page, name)


def test_measured_charts_and_hints_in_the_browser(browser, tmp_path):
    """A page with the bench's charts and three hint levels (as the template writes them)."""
    hints = "".join(
        f"<details>\n<summary>Level {n}</summary>\n\nHint {n}.\n\n</details>\n\n" for n in (1, 2, 3)
    )
    markdown = (
        LESSON.replace("## Navigation", "## More hints\n\n" + hints + "## Navigation")
        + "\n## Measured\n\n**ReLU over BLOCK sizes**\n\n| | ms |\n|---|---|\n| copy | 0.506 |\n"
    )
    page = tmp_path / "lesson.html"
    page.write_bytes(
        lesson_html(markdown, lang="en", title="charts", env=ENV, bench=BENCH, labels=LABELS)
    )
    state, urls = _load(browser, page)
    assert state == "done" and _left_the_page(urls, page) == [] and _severe(browser) == []
    charts = browser.execute_script(
        "return [...document.querySelectorAll('figure.chart svg')].map(s => s.textContent)"
    )
    assert len(charts) == 2 and all("NVIDIA H200" in text for text in charts)
    # hints: one level at a time, each opened on purpose
    shown = "return [...document.querySelectorAll('section:has(#more-hints) details')].map(d => d.checkVisibility())"
    assert browser.execute_script(shown) == [True, False, False]
    browser.execute_script(
        "document.querySelector('section:has(#more-hints) details summary').click()"
    )
    assert browser.execute_script(shown) == [True, True, False]
    if os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        screenshot(browser, SHOTS / "charts-light.png")
        shutil.copy(page, SHOTS / "charts.html")


def _middle_page(root: Path) -> Path:
    """A course bundle's middle lesson page: a previous and a next link, with three lessons or more."""
    pages = sorted(root.glob("*/lesson.html"))
    return pages[len(pages) // 2]


def _bundles(packs) -> list[str]:
    """The course bundles (not the lesson packs, not the Quarto projects)."""
    return [
        name for name in packs if not name.startswith("lesson") and not name.endswith("-quarto")
    ]


def _two_bundles(packs) -> list[str]:
    """The first exercise bundle and the last answer bundle (two editions, two languages)."""
    bundles = _bundles(packs)
    return [
        next(name for name in bundles if name.endswith("-exercise")),
        [name for name in bundles if name.endswith("-answer")][-1],
    ]


def test_course_bundle_pages_link_to_each_other(browser, packs):
    """index.html of every course bundle and the middle lesson page of two (an exercise and an
    answer bundle, two languages; the others are made the same way): every link to a page reaches
    a file in the bundle; the lesson page draws its figures with the bundle's one mermaid (the
    first with the network switched off), and requests nothing else."""
    bundles, two = _bundles(packs), _two_bundles(packs)
    for name in bundles:
        root = packs[name]
        lesson_pages = sorted(root.glob("*/lesson.html"))
        middle = _middle_page(root)
        for page in (root / "index.html", middle) if name in two else (root / "index.html",):
            set_offline(browser, name == two[0])
            try:
                state, urls = _load(browser, page)
            finally:
                set_offline(browser, False)
            assert state in ("done", ""), (page, state)
            assert _left_the_page(urls, page) == [] and _severe(browser) == []
            links = browser.execute_script(
                "return [...document.querySelectorAll('main a[href]')].map(a => a.getAttribute('href'))"
                ".filter(h => !/^[a-z]+:/.test(h) && (h.endsWith('.html') || h.includes('.html#') || h.endsWith('.md')))"
            )
            assert not [link for link in links if ".md" in link], (page, links)
            for link in links:
                assert (page.parent / link.split("#")[0]).resolve().is_file(), (page, link)
            assert browser.execute_script("return document.documentElement.lang") in name
        if page != middle:
            continue
        at = lesson_pages.index(
            middle
        )  # the middle lesson's page links to its neighbours, in order
        neighbours = lesson_pages[max(at - 1, 0) : at] + lesson_pages[at + 1 : at + 2]
        assert [
            (middle.parent / link).resolve() for link in links if link.startswith("../")
        ] == neighbours, links
        assert (
            state == "done" and (root / MERMAID_FILE).as_uri() in urls
        )  # drawn by the bundle's one copy
        figures = _figures_and_formulas(
            browser, (middle.parent / "lesson.md").read_text(encoding="utf-8")
        )
        print(
            f"chromium {name}/{middle.parent.name}/lesson.html: figures {state} ({figures} drawn by "
            f"../{MERMAID_FILE}), {browser.execute_script('return document.querySelectorAll(`main math`).length')} "
            f"formulas, requests {[u.rsplit('/', 2)[-2] + '/' + u.rsplit('/', 1)[-1] for u in urls]}, "
            f"console errors {_severe(browser)}{', offline' if name == two[0] else ''}"
        )
    if os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        _load(browser, packs[bundles[-1]] / "index.html")
        screenshot(browser, SHOTS / f"{bundles[-1]}-index.png")


def test_firefox_draws_bundle_and_lesson_pages_from_files(firefox_browser, packs):
    """Firefox (no network at all): the middle lesson page of the first exercise bundle and of the
    last answer bundle (mermaid shared, loaded from file:// under the page's policy) and the first
    single-lesson answer page (mermaid inlined): figures drawn with their labels, formulas as
    MathML, no console error, no request."""
    pages = [_middle_page(packs[name]) for name in _two_bundles(packs)] + [
        packs[sorted(SCHEME_PAGES)[0]] / "lesson.html"
    ]
    for page in pages:
        firefox_browser.get(page.as_uri())
        state = wait_for_figures(firefox_browser)
        assert state == "done", (page, state, firefox_browser.console())
        figures = _figures_and_formulas(
            firefox_browser, (page.parent / "lesson.md").read_text(encoding="utf-8")
        )
        errors, requests = firefox_browser.console(), firefox_browser.requests()
        assert errors == [] and [url for url in requests if not url.startswith("data:")] == [], (
            page,
            errors,
            requests,
        )
        shared = page.parent.parent / MERMAID_FILE
        assert (f'src="../{MERMAID_FILE}"' in page.read_text(encoding="utf-8")) == shared.is_file()
        where = (
            f"{page.parent.parent.name}/{page.parent.name}"
            if shared.is_file()
            else page.parent.name
        )
        print(
            f"firefox {where}/lesson.html: figures {state} ({figures} drawn by "
            f"{'../' + MERMAID_FILE if shared.is_file() else 'its inlined mermaid'}), "
            f"{firefox_browser.execute_script('return document.querySelectorAll(`main math`).length')} formulas, "
            f"network requests {[u for u in requests if not u.startswith('data:')]}, console errors {errors}"
        )
        if os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
            firefox_browser.screenshot(
                SHOTS / f"firefox-{page.parent.parent.name}-{page.parent.name}.png"
            )
