"""lesson.html in a real browser: the system's headless Chromium, driven by Selenium.

Pages are loaded from the test run's unzipped packs (conftest's `packs`; which ones: LOADED
below): every formula is MathML, every figure an SVG with its labels, no console error, no request
leaving the page; the first lesson's exercise page in each language is loaded with the network
switched off. With COURSEPACK_SCREENSHOTS=1, screenshots of every page (light, dark, print) go to
build/screenshots/ for review.
Skipped, with the reason, where Chromium is missing; under CI=true that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from generator.html import lesson_html
from tests.chromium import missing, new_driver, requests_sent, screenshot, set_offline, wait_for_figures
from tests.golden_update import golden_names
from tests.test_html import BENCH, ENV, LABELS, LESSON, _formulas

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parent.parent
SHOTS = REPO / "build" / "screenshots"


PACKS = golden_names()   # every lesson pack (tests/test_golden.py holds them to the content)
FIRST_LESSON = PACKS[0].split("-")[0]
# A lesson's figures and formulas are the same in both editions (tests/test_html.py checks each
# page's HTML, formulas and figure sources without a browser, and that both editions draw the same
# figures): every answer page is loaded, and one exercise page, the first lesson's in the last
# language, with the network switched off (every page is checked to send no request).
# Dark and print come from the page template, the same for every pack: the first lesson's answer
# page in the first language goes through them. COURSEPACK_SCREENSHOTS=1 loads every page, in each.
OFFLINE_PAGES = {[name for name in PACKS if name.startswith(FIRST_LESSON) and name.endswith("-exercise")][-1]}
SCHEME_PAGES = {[name for name in PACKS if name.startswith(FIRST_LESSON) and name.endswith("-answer")][0]}
LOADED = PACKS if os.environ.get("COURSEPACK_SCREENSHOTS") == "1" else [
    name for name in PACKS if name.endswith("-answer") or name in OFFLINE_PAGES]
LABEL = re.compile(r'\["([^"]+)"\]')


def _require_browser() -> None:
    reason = missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    _require_browser()
    driver = new_driver()
    yield driver
    driver.quit()


def _load(driver, page: Path) -> tuple[str, list[str]]:
    requests_sent(driver)   # forget what came before
    driver.get_log("browser")
    driver.get(page.as_uri())
    return wait_for_figures(driver), requests_sent(driver)


def _left_the_page(urls: list[str], page: Path) -> list[str]:
    return [url for url in urls if url != page.as_uri() and not url.startswith("data:")]


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
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "media": media, "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})


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
    assert browser.execute_script("return document.documentElement.lang") == name.split("-", 1)[1].rsplit("-", 1)[0]
    assert browser.execute_script("return document.title") == markdown.splitlines()[0].lstrip("# ")

    assert browser.execute_script("return document.querySelectorAll('main math').length") == _formulas(markdown) > 0
    assert _dollar_text(browser) == []

    sources = re.findall(r"```mermaid\n(.*?)```", markdown, re.S)
    figures = browser.execute_script(
        "return [...document.querySelectorAll('pre.mermaid')].map(p => { const s = p.querySelector('svg');"
        " return s ? s.textContent : null; })")
    assert len(figures) == len(sources) > 0
    for source, text in zip(sources, figures):
        assert text is not None, "a figure was not drawn"
        flat = re.sub(r"\s+", "", text)
        for label in LABEL.findall(source):
            assert re.sub(r"\s+", "", label) in flat, f"figure label {label!r} missing from its SVG"

    assert browser.execute_script("return document.querySelector('blockquote.callout') !== null")
    assert browser.execute_script("return document.querySelectorAll('pre.highlight span.k').length") > 0
    assert _severe(browser) == []
    assert _left_the_page(urls, page) == []
    if name in SCHEME_PAGES or os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        _schemes(browser, page, name)


def test_measured_charts_and_hints_in_the_browser(browser, tmp_path):
    """A page with the bench's charts and three hint levels (as the template writes them)."""
    hints = "".join(f"<details>\n<summary>Level {n}</summary>\n\nHint {n}.\n\n</details>\n\n" for n in (1, 2, 3))
    markdown = (LESSON.replace("## Navigation", "## More hints\n\n" + hints + "## Navigation")
                + "\n## Measured\n\n**ReLU over BLOCK sizes**\n\n| | ms |\n|---|---|\n| copy | 0.506 |\n")
    page = tmp_path / "lesson.html"
    page.write_bytes(lesson_html(markdown, lang="en", title="charts", env=ENV, bench=BENCH, labels=LABELS))
    state, urls = _load(browser, page)
    assert state == "done" and _left_the_page(urls, page) == [] and _severe(browser) == []
    charts = browser.execute_script("return [...document.querySelectorAll('figure.chart svg')].map(s => s.textContent)")
    assert len(charts) == 2 and all("NVIDIA H200" in text for text in charts)
    # hints: one level at a time, each opened on purpose
    shown = "return [...document.querySelectorAll('section:has(#more-hints) details')].map(d => d.checkVisibility())"
    assert browser.execute_script(shown) == [True, False, False]
    browser.execute_script("document.querySelector('section:has(#more-hints) details summary').click()")
    assert browser.execute_script(shown) == [True, True, False]
    if os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        screenshot(browser, SHOTS / "charts-light.png")
        shutil.copy(page, SHOTS / "charts.html")


def test_course_bundle_pages_link_to_each_other(browser, packs):
    """index.html and the lesson pages of a course bundle: every link to a page reaches a file in it."""
    bundles = [name for name in packs if not name.startswith("lesson") and not name.endswith("-quarto")]
    assert bundles
    first_answers = next(name for name in bundles if name.endswith("-answer"))   # the others link the same way
    for name in bundles:
        root = packs[name]
        lesson_pages = sorted(root.glob("*/lesson.html"))
        pages = [root / "index.html"]
        if name == first_answers:   # the middle lesson's page: a previous and a next link, with three or more
            pages.append(lesson_pages[len(lesson_pages) // 2])
        for page in pages:
            state, urls = _load(browser, page)
            assert state in ("done", ""), (page, state)
            assert _left_the_page(urls, page) == [] and _severe(browser) == []
            links = browser.execute_script(
                "return [...document.querySelectorAll('main a[href]')].map(a => a.getAttribute('href'))"
                ".filter(h => !/^[a-z]+:/.test(h) && (h.endsWith('.html') || h.includes('.html#') || h.endsWith('.md')))")
            assert not [link for link in links if ".md" in link], (page, links)
            for link in links:
                assert (page.parent / link.split("#")[0]).resolve().is_file(), (page, link)
        assert browser.execute_script("return document.documentElement.lang") in name
        if len(pages) > 1:   # the middle lesson's page links to its neighbours, in order
            middle = lesson_pages.index(pages[-1])
            neighbours = lesson_pages[max(middle - 1, 0):middle] + lesson_pages[middle + 1:middle + 2]
            assert [(page.parent / link).resolve() for link in links if link.startswith("../")] == neighbours, links
    if os.environ.get("COURSEPACK_SCREENSHOTS") == "1":
        _load(browser, packs[bundles[-1]] / "index.html")
        screenshot(browser, SHOTS / f"{bundles[-1]}-index.png")
