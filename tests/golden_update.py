"""Rewrite tests/golden/ from the current content and templates: `make golden`.

The golden trees are the unverified packs (README, manifest and all), so they change only when
content, templates or the checker's data change. Review `git diff tests/golden` before committing.
lesson.html is kept with its inlined mermaid (3.5 MB, pinned by sha256) replaced by one line;
check.py as its lesson data only (check.data.json: every check.py is the same joined checker,
generator/checker/, with that data; tests/test_golden.py checks the joining).
"""

from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path

from generator.pipeline.build import render_all
from generator.files.resources import TEMPLATES
from generator.pipeline.options import BuildOptions
from generator.render.html import strip_vendored
from generator.content.loader import load_content
from tests.quarto_project import quarto_projects
from generator.render.render import finalize_pack, jinja_env

GOLDEN = Path(__file__).resolve().parent / "golden"
QUARTO_GOLDEN = GOLDEN.with_name("golden_quarto")  # the Quarto projects (tests/test_quarto.py)
REPO = GOLDEN.parent.parent


def golden_names() -> list[str]:
    """The packs that have a golden tree (every lesson pack of the real content, when up to date)."""
    return sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) if GOLDEN.is_dir() else []


@lru_cache(maxsize=1)
def real_course():
    """This repository's content and every pack of it rendered (before verification), once per
    process: the test files that read them share them. Read only."""
    content = load_content(REPO / "content")
    return content, render_all(content, BuildOptions(content=REPO / "content"))


@lru_cache(maxsize=1)
def current_packs() -> dict[str, dict[str, bytes]]:
    """Every lesson pack as the golden trees hold it, once per process. Read only."""
    env = jinja_env(TEMPLATES)
    packs = {}
    for editions in real_course()[1].values():
        for ctx, pack in editions.values():
            final = finalize_pack(ctx, env, pack, None)
            files = {
                name: strip_vendored(data) if name.endswith(".html") else data
                for name, data in final.files.items()
            }
            files["check.data.json"] = checker_data_text(files.pop("check.py"))
            packs[final.name] = files
    return packs


def checker_data_text(check_py: bytes) -> bytes:
    """The data block of a generated check.py, as the JSON text it was written from."""
    text = check_py.decode("utf-8")
    start = text.index('LESSON = json.loads(r"""') + len('LESSON = json.loads(r"""')
    return (text[start : text.index('""")', start)] + "\n").encode("utf-8")


@lru_cache(maxsize=1)
def current_projects() -> dict[str, dict[str, bytes]]:
    """Each Quarto project as its golden tree holds it: pages, configuration, README and manifest
    (its kernel files and checkers are the lesson packs'). Read only."""
    projects = quarto_projects(*real_course(), {}, jinja_env(TEMPLATES))
    return {
        p.name: {name: data for name, data in p.files.items() if not name.endswith((".py", ".txt"))}
        for p in projects
    }


def main() -> None:
    for folder, trees in ((GOLDEN, current_packs()), (QUARTO_GOLDEN, current_projects())):
        if folder.exists():
            shutil.rmtree(folder)
        for name, files in trees.items():
            for file, data in files.items():
                path = folder / name / file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    print(
        f"rewrote {GOLDEN} and {QUARTO_GOLDEN}; review with: git diff --stat tests/golden tests/golden_quarto"
    )


if __name__ == "__main__":
    main()
