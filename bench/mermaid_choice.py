"""Mermaid in lesson.html: inlined and drawn by the reader's browser, or pre-rendered to SVG at
build time? Measures both on this machine (needs Debian's chromium and chromium-driver):

- inlined (what the build does): page size, the zip's growth (the compressed lesson.html entry),
  the time the page takes to draw its figures in headless Chromium;
- pre-rendered (the alternative): a build step that starts Chromium, renders every figure with
  the same mermaid and keeps the SVG: its time, the SVG sizes, and whether the bytes depend on the
  fonts of the machine that builds (rendered twice with two font stacks).

Run: python bench/mermaid_choice.py   (a benchmark: it prints numbers and never fails on time)
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.pipeline.build import build  # noqa: E402
from generator.pipeline.options import BuildOptions  # noqa: E402
from generator.render.html import mermaid_script, strip_vendored  # noqa: E402
from generator.content.markdown import parse  # noqa: E402
from tests.chromium import missing, new_driver, wait_for_figures  # noqa: E402


def main() -> int:
    if missing():
        print(f"needs the system Chromium: {missing()}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        build(
            BuildOptions(
                content=REPO / "content",
                templates=REPO / "templates",
                out=root / "build",
                verify=False,
            ),
            progress=lambda _: None,
        )
        print(f"build --no-verify of all packs: {time.perf_counter() - started:.1f} s")
        print("\ninlined mermaid (what the build does)")
        print(
            f"  {'pack':34} {'page':>9} {'w/o mermaid':>11} {'zip entry':>9} {'zip total':>9} {'drawn in':>8}"
        )
        pages = []
        driver = new_driver()
        try:
            for path in sorted((root / "build" / "dist").glob("*.zip")):
                with zipfile.ZipFile(path) as archive:
                    info = archive.getinfo(f"{path.stem}/lesson.html")
                    archive.extractall(root / "unzipped")
                page = root / "unzipped" / path.stem / "lesson.html"
                data = page.read_bytes()
                pages.append(data)
                times = []
                for _ in range(3):
                    driver.get(page.as_uri())
                    assert wait_for_figures(driver) == "done"
                    times.append(
                        int(
                            driver.execute_script(
                                "return document.documentElement.dataset.figuresMs"
                            )
                        )
                    )
                print(
                    f"  {path.stem:34} {len(data):9,} {len(strip_vendored(data)):11,} {info.compress_size:9,} "
                    f"{path.stat().st_size:9,} {statistics.median(times):6} ms"
                )
            script = mermaid_script().encode()
            print(
                f"  mermaid.min.js + licence: {len(script):,} bytes, {len(zlib.compress(script, 6)):,} deflated (level 6)"
            )
            print("\npre-rendered SVG (the alternative)")
            sources = sorted(
                {
                    t.content.strip()
                    for data in pages
                    for t in parse(_markdown_of(root, data))
                    if t.type == "fence" and t.info.strip() == "mermaid"
                }
            )
            _prerender(root, sources)
        finally:
            driver.quit()
    return 0


def _markdown_of(root: Path, page: bytes) -> str:
    for md in (root / "unzipped").glob("*/lesson.md"):
        if (md.parent / "lesson.html").read_bytes() == page:
            return md.read_text(encoding="utf-8")
    return ""


def _prerender(root: Path, sources: list[str]) -> None:
    host = root / "render.html"
    host.write_text(
        "<!DOCTYPE html><meta charset=utf-8><body><script>" + mermaid_script() + "</script>",
        encoding="utf-8",
    )
    results = {}
    for fonts in ("'Noto Sans CJK SC', sans-serif", "'DejaVu Sans', sans-serif"):
        started = time.perf_counter()
        driver = new_driver()
        try:
            driver.get(host.as_uri())
            svgs = []
            for index, source in enumerate(sources):
                svgs.append(
                    driver.execute_async_script(
                        "const [src, id, font, done] = arguments;"
                        "mermaid.initialize({startOnLoad: false, securityLevel: 'strict', fontFamily: font,"
                        " themeVariables: {fontFamily: font}});"
                        "mermaid.render(id, src).then(r => done(r.svg), e => done('ERROR ' + e));",
                        source,
                        f"figure{index}",
                        fonts,
                    )
                )
        finally:
            driver.quit()
        seconds = time.perf_counter() - started
        results[fonts] = svgs
        sizes = [len(s.encode()) for s in svgs]
        packed = [len(zlib.compress(s.encode(), 6)) for s in svgs]
        print(
            f"  fonts {fonts}: {len(svgs)} figures in {seconds:.1f} s (Chromium start included); "
            f"SVG {min(sizes):,}-{max(sizes):,} bytes, {min(packed):,}-{max(packed):,} deflated"
        )
    (font_a, a), (font_b, b) = results.items()
    # The font names are in the SVG's style: take them out, so only the geometry is compared
    # (text widths measured with the fonts this machine has).
    a = [x.replace(font_a, "FONT").replace(font_a.replace("'", '"'), "FONT") for x in a]
    b = [y.replace(font_b, "FONT").replace(font_b.replace("'", '"'), "FONT") for y in b]
    same = sum(x == y for x, y in zip(a, b))
    print(
        f"  same geometry (font names taken out) under the two font stacks: {same} of {len(a)} figures "
        f"({', '.join(hashlib.sha256(x.encode()).hexdigest()[:8] for x in a)} vs "
        f"{', '.join(hashlib.sha256(y.encode()).hexdigest()[:8] for y in b)})"
    )


if __name__ == "__main__":
    sys.exit(main())
