"""`coursepack init DIR`: a new course with one example lesson that builds and verifies as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

from generator.errors import CoursepackError

SKELETON = Path(__file__).resolve().parent / "content"


def init_course(folder: Path) -> list[Path]:
    """Copy the example course into folder/content; refuses to touch an existing content folder."""
    target = folder / "content"
    if target.exists():
        raise CoursepackError(
            f"{target} already exists; init writes only into a new folder (nothing was changed)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SKELETON, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return sorted(p for p in target.rglob("*") if p.is_file())
