"""Issue 10.1: no pack file and no loaded value holds a control character (newline and tab aside).

ruamel's round-trip composer left U+0007 at every fold of a folded (`>-`) YAML value; it reached
lesson.md, README.md, the notebook's JSON and check.py's data block of every pack."""

from __future__ import annotations

import dataclasses
import json
import re
import zipfile

from pydantic import BaseModel

from generator.content.loader import load_content
from tests.conftest import REPO, lesson_data

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def controls(value, where: str = "") -> list[str]:
    """Where a control character sits in value (strings inside dicts, lists, models, dataclasses)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, str):
        return [f"{where}: U+{ord(m.group()):04X} at {m.start()}" for m in CONTROL.finditer(value)]
    if isinstance(value, BaseModel):
        return controls(value.model_dump(), where)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            hit
            for f in dataclasses.fields(value)
            for hit in controls(getattr(value, f.name), f"{where}.{f.name}")
        ]
    if isinstance(value, dict):
        return [
            hit
            for k, v in value.items()
            for hit in controls(k, where) + controls(v, f"{where}.{k}")
        ]
    if isinstance(value, (list, tuple)):
        return [hit for i, v in enumerate(value) for hit in controls(v, f"{where}[{i}]")]
    return []


def test_no_control_characters_in_any_file_of_any_pack(built):
    """Every file of the test run's build of this repository's content (conftest's `built`)."""
    zips = sorted((built / "dist").glob("*.zip"))
    assert len(zips) >= 4
    found, checked = [], 0
    for path in zips:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                data = archive.read(name)
                found += controls(data, f"{path.name}:{name}")
                text = data.decode("utf-8")
                if name.endswith(
                    (".ipynb", ".json")
                ):  # escapes such as \u0007 decode to the character
                    found += controls(json.loads(text), f"{path.name}:{name} (decoded)")
                if name.endswith("/check.py"):
                    found += controls(lesson_data(text), f"{path.name}:{name} (LESSON data)")
                checked += 1
    assert checked > 30
    assert found == []


def test_no_control_characters_in_what_the_loader_returns():
    content = load_content(REPO / "content")
    assert controls(content.locales, "locales") == []
    assert controls(content.lessons, "lessons") == []
    assert controls(content.course, "course") == []
