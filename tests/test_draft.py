"""A language in progress (issue 39): add Japanese, translate part of it in PO, import, build a
draft; status locates every unit that needs work."""

import json
import zipfile

import polib
import pytest

from generator.pipeline.build import build
from generator.cli import main
from generator.errors import ContentError
from generator.content.loader import load_content
from generator.content.translate_po import export, import_po
from tests.conftest import options_for

JA = "content/lessons/lesson03_relu/text.ja.yaml"


def cli(root, *args):
    return main([*args, "--content", str(root / "content")])


def test_half_translated_japanese_builds_as_a_draft(content_copy, capsys):
    root = content_copy
    assert cli(root, "i18n", "new", "ja") == 0
    out = root / "po"
    export(root / "content", "ja", out, ["lesson03_relu"])
    path = out / "lesson03_relu.po"
    po = polib.pofile(str(path))
    done = {
        "goal": "この課を終えると、Triton で ReLU カーネルを書けるようになります。",
        "edition_note_exercise": "**練習版**：本文、コードの穴埋め一つ、問題とヒント 1〜3。",
    }
    for entry in po:
        if entry.msgctxt in done:
            entry.msgstr = done[entry.msgctxt]
    po.save(str(path))
    result = import_po(root / "content", "ja", [path])
    assert result.written == [root / JA] and result.counts == {"current": 2, "empty": len(po) - 2}
    capsys.readouterr()

    assert cli(root, "i18n", "status", "ja") == 1
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if line.startswith(f"  {JA}:")]
    assert len(lines) == len(po) - 2 and all(line.split(":")[1].isdigit() for line in lines)
    assert f"{JA}:" in text and "missing  questions.q1.answer  (blocks a release)" in text
    assert cli(root, "check") == 0
    printed = capsys.readouterr().out.splitlines()
    assert (
        f"{JA}: draft translation, {len(po) - 2} units in the source language, 0 stale" in printed
    )
    assert printed[-1] == "content is valid; every pack renders; no answer leaks"

    build(
        options_for(root, verify=False, lessons=("lesson03_relu",), locales=("ja",)),
        progress=lambda _: None,
    )
    with zipfile.ZipFile(root / "build" / "dist" / "lesson03_relu-ja-exercise.zip") as archive:
        lesson = archive.read("lesson03_relu-ja-exercise/lesson.md").decode()
    assert done["goal"] in lesson and f"] {done['goal']}" not in lesson  # translated: no marker
    assert "⚠ [未翻訳のため原文のまま表示しています] " in lesson  # the rest, in Japanese
    assert "尚未翻译" not in lesson
    assert "翻訳途中の草稿：" in lesson and "件の項目が原文のままです" in lesson
    report = (root / "build" / "report.md").read_text(encoding="utf-8")
    assert "- ja: draft translation, " in report


def test_a_published_locale_stays_strict_and_drafts_must_be_translations(content_copy):
    root = content_copy
    assert cli(root, "i18n", "new", "ja") == 0
    course = root / "content" / "course.yaml"
    course.write_text(course.read_text().replace("drafts: [ja]\n", ""), encoding="utf-8")
    with pytest.raises(ContentError) as info:
        build(
            options_for(root, verify=False, lessons=("lesson03_relu",), locales=("ja",)),
            progress=lambda _: None,
        )
    assert "questions.q1.answer: missing in ja: a release never falls back" in str(info.value)
    build(
        options_for(root, verify=False, lessons=("lesson03_relu",), locales=("ja",), draft=True),
        progress=lambda _: None,
    )  # build --draft
    course.write_text(
        course.read_text().replace(
            "locales: [zh-CN, en, ja]", "locales: [zh-CN, en, ja]\ndrafts: [fr]"
        ),
        encoding="utf-8",
    )
    with pytest.raises(ContentError) as info:
        load_content(root / "content")
    assert "course.yaml: drafts: draft fr is not one of the translations in locales" in str(
        info.value
    )


def test_status_locates_missing_and_stale_units(content_copy, capsys):
    """A stale unit at its value; a key the file lacks at the key of the mapping above it."""
    root = content_copy
    en = root / "content/lessons/lesson03_relu/text.en.yaml"
    zh = root / "content/lessons/lesson03_relu/text.zh-CN.yaml"
    zh.write_text(
        zh.read_text(encoding="utf-8").replace("学完本课后", "学完本课以后"), encoding="utf-8"
    )
    lines = en.read_text(encoding="utf-8").splitlines()
    goal = next(i for i, line in enumerate(lines, 1) if line.startswith("goal:"))
    q1 = next(i for i, line in enumerate(lines, 1) if line == "  q1:")
    start = next(i for i in range(q1, len(lines)) if lines[i] == "    answer: |")
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("      "))
    en.write_text(
        "\n".join(lines[:start] + lines[end:]) + "\n", encoding="utf-8"
    )  # q1's answer removed
    assert cli(root, "i18n", "status", "en", "--json") == 1
    report = json.loads(capsys.readouterr().out)
    (lesson,) = [f for f in report["files"] if f["file"].endswith("lesson03_relu/text.en.yaml")]
    assert [(s["unit"], s["line"], s["column"]) for s in lesson["stale"]] == [("goal", goal, 7)]
    assert [(m["unit"], m["line"], m["column"]) for m in lesson["missing"]] == [
        ("questions.q1.answer", q1, 3)
    ]
    assert cli(root, "i18n", "status", "en") == 1
    out = capsys.readouterr().out
    rel = "content/lessons/lesson03_relu/text.en.yaml"
    assert f"  {rel}:{q1}:3: missing  questions.q1.answer  (blocks a release)" in out
    assert f"  {rel}:{goal}:7: stale    goal: source changed" in out


@pytest.mark.cuda
def test_a_draft_lesson_verifies_on_the_gpu(content_copy):
    """A draft's packs go through the same gate: answer, exercise and declared mistakes on the GPU."""
    root = content_copy
    assert cli(root, "i18n", "new", "ja") == 0
    result = build(
        options_for(root, runner="cuda", lessons=("lesson03_relu",), locales=("ja",)),
        progress=print,
    )
    assert sorted(result.zips) == ["lesson03_relu-ja-answer.zip", "lesson03_relu-ja-exercise.zip"]
    record = result.verification["lesson03_relu/ja"]
    assert record["runner"] == "cuda" and record["passed"]
    assert record["mistakes_caught"] == record["mistakes_declared"] > 0
