"""A planted leak in every place a leak can hide is found."""

import io
import json
import zipfile
from pathlib import Path

import pytest

from generator.pipeline.build import render_all
from generator.pipeline.options import BuildOptions
from generator.gate.leaks import fingerprints, scan_files, zip_meta
from generator.content.loader import load_content

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def setup():
    content = load_content(REPO / "content")
    lesson = content.lessons["lesson03_relu"]
    pack = render_all(content, BuildOptions(content=REPO / "content", locales=("en",)))[
        ("lesson03_relu", "en")
    ]["exercise"][1]
    return lesson, pack, fingerprints(lesson, "en")


def scan_zip(data: bytes, prints, label: str) -> list[str]:
    """A zip's entry names, archive comment and every entry's contents, scanned."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = {info.filename: archive.read(info) for info in archive.infolist()}
        meta = {"(zip comment)": archive.comment, **zip_meta(archive.infolist())}
    return scan_files({**files, **meta}, prints, label)


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


@pytest.mark.parametrize(
    "place",
    [
        "lesson.md",
        "relu.py comment",
        "check.py",
        "notebook metadata",
        "notebook output",
        "notebook attachment",
        "reformatted",
    ],
)
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


def test_a_leak_only_in_the_course_bundle_is_found_and_nothing_is_released(content_copy):
    """A template that prints an answer only where its navigation links (a course bundle's lesson
    pages): the bundle's own scan finds it, in each lesson's folder; build/dist stays as it was."""
    from generator.pipeline.build import build
    from generator.gate.leaks import LeakError
    from tests.conftest import options_for

    options = options_for(content_copy, verify=False, locales=("en",))
    build(options, progress=lambda _: None)
    before = {p.name: p.read_bytes() for p in (options.out / "dist").iterdir()}
    template = content_copy / "templates" / "pack" / "navigation.md.j2"
    text = template.read_text(encoding="utf-8")
    marker = "{% for link in nav %}"
    assert text.count(marker) == 1
    template.write_text(
        text.replace(
            marker,
            "{% if nav | selectattr('href') | list %}\n{{ text.solution_note }}\n"
            "{% endif %}\n" + marker,
        ),
        encoding="utf-8",
    )
    with pytest.raises(LeakError) as caught:
        build(options, progress=lambda _: None)
    lines = [
        line for line in str(caught.value).splitlines() if "contains answer-only material" in line
    ]
    assert lines and all(
        line.startswith("triton_course-en-exercise.zip/triton_course-en-exercise/lesson0")
        for line in lines
    ), str(caught.value)
    assert {line.split("/")[2] for line in lines} == {
        lesson.spec.id for lesson in load_content(content_copy / "content").published
    }
    assert {p.name: p.read_bytes() for p in (options.out / "dist").iterdir()} == before
    assert not (options.out / "dist.new").exists()


def test_many_fingerprints_find_what_a_plain_search_finds():
    """Against thousands of fingerprints (a bundle's index against every lesson's) the scan looks
    where each one's first characters occur: the same first hit as trying each in turn."""
    import random
    import string
    from generator.gate.leaks import MANY_PRINTS, Fingerprint

    rng = random.Random(3)
    text = "".join(rng.choice(string.ascii_lowercase) for _ in range(50_000))
    prints = [
        Fingerprint(f"p{i}", "".join(rng.choice(string.ascii_lowercase) for _ in range(16)))
        for i in range(MANY_PRINTS + 500)
    ]
    assert scan_files({"index.md": text.encode()}, prints, "b") == []
    planted = prints[:1000] + [
        Fingerprint("late", text[40_000:40_020]),
        Fingerprint("short", text[7:12]),
    ]
    planted = (
        prints[1000:] + planted + [Fingerprint("first", text[100:130])]
    )  # order decides which is named
    assert scan_files({"index.md": text.encode()}, planted, "b") == [
        "b/index.md: contains answer-only material from late"
    ]


def test_normalising_line_by_line_is_normalising_the_whole():
    from generator.gate.leaks import normalise, normalise_lines

    texts = [
        "ΣΑΣ\nΣ",
        "a\r\nb",
        "Ǆ\u0301\nx",
        "ﬁ\nİ\n\u0345x",
        "e\n\u0301",
        "x \t\n\u3000y",
        "ＡＢＣ “q” **b**\n# h",
    ]
    for text in texts + [text * 2 for text in texts]:
        assert normalise_lines(text) == normalise(text), repr(text)


def test_ascii_text_is_normalised_as_any_text():
    """normalise's ASCII path (bytes.lower, bytes.translate) against the expression it stands for."""
    import random
    import unicodedata
    from generator.gate.leaks import IGNORED, normalise

    def slow(text):
        return IGNORED.sub("", unicodedata.normalize("NFKC", text).lower())

    for code in range(128):
        assert normalise(chr(code) * 2 + "aB") == slow(chr(code) * 2 + "aB"), code
    rng = random.Random(2)
    for _ in range(200):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randrange(40)))
        assert normalise(text) == slow(text)
    assert normalise("Ａ “x” É") == slow("Ａ “x” É")  # not ASCII: the expression
