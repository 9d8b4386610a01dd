"""A planted leak in every place a leak can hide is found."""

import io
import json
import zipfile
from pathlib import Path

import pytest

from generator.build import BuildOptions, render_all
from generator.leaks import fingerprints, scan_files, scan_zip
from generator.loader import load_content

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def setup():
    content = load_content(REPO / "content")
    lesson = content.lessons["lesson03_relu"]
    pack = render_all(content, BuildOptions(locales=("en",)))[("lesson03_relu", "en")]["exercise"][1]
    return lesson, pack, fingerprints(lesson, "en")


def test_clean_exercise_has_no_leak(setup):
    _, pack, prints = setup
    assert scan_files(pack.files, prints, "p") == []


def _notebook_with(pack, where: str, secret: str) -> bytes:
    nb = json.loads(pack.files["lesson.ipynb"])
    if where == "metadata":
        nb["metadata"]["secret"] = secret
    elif where == "output":
        nb["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [secret]}]
    elif where == "attachment":
        nb["cells"][0]["attachments"] = {"a.txt": {"text/plain": secret}}
    return json.dumps(nb).encode()


@pytest.mark.parametrize("place", ["lesson.md", "relu.py comment", "check.py", "notebook metadata",
                                   "notebook output", "notebook attachment", "reformatted"])
def test_planted_leaks_in_files(setup, place):
    lesson, pack, prints = setup
    answer = lesson.texts["en"].questions["q2"].answer
    files = dict(pack.files)
    if place == "lesson.md":
        files["lesson.md"] += answer.encode()
    elif place == "relu.py comment":
        files["relu.py"] += f"# {lesson.solution.fill}\n".encode()
    elif place == "check.py":
        files["check.py"] += f"HINT = {lesson.texts['en'].hints[3]!r}\n".encode()
    elif place.startswith("notebook"):
        files["lesson.ipynb"] = _notebook_with(pack, place.split()[1], answer)
    elif place == "reformatted":
        files["lesson.md"] += b"\n" + b"   ".join(answer.upper().encode().split())
    assert scan_files(files, prints, "p"), place


@pytest.mark.parametrize("place", ["entry name", "zip comment", "entry comment"])
def test_planted_leaks_in_zip(setup, place):
    lesson, pack, prints = setup
    secret = lesson.solution.fill
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in pack.files.items():
            info = zipfile.ZipInfo(name)
            if place == "entry comment" and name == "lesson.md":
                info.comment = secret.encode()
            archive.writestr(info, data)
        if place == "entry name":
            archive.writestr(f"{secret}.txt", b"x")
        if place == "zip comment":
            archive.comment = secret.encode()
    assert scan_zip(buffer.getvalue(), prints, "p.zip"), place
