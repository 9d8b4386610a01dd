"""Translators' workflow: stale units with source diffs, located token errors, bless keeps the
layout, a third language needs no code, and a release never falls back on answers."""

import json
import zipfile
from pathlib import Path

import pytest

from generator.pipeline.build import build
from generator.cli import main
from generator.errors import ContentError
from generator.content.i18n import protected_problems, word_diff
from generator.content.loader import load_content
from tests.conftest import options_for

ZH = "content/lessons/lesson03_relu/text.zh-CN.yaml"
EN = "content/lessons/lesson03_relu/text.en.yaml"


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def cli(root: Path, *args: str) -> int:
    return main(["i18n", *args, "--content", str(root / "content")])


def test_repository_translations_are_up_to_date(capsys):
    assert main(["i18n", "status"]) == 0
    assert "all translations are up to date" in capsys.readouterr().out


def test_source_edit_makes_the_unit_stale_with_a_word_diff(content_copy, capsys):
    edit(content_copy, ZH, "学完本课后，你应该能", "学完本课以后，你应当能")
    assert cli(content_copy, "status", "en") == 1
    out = capsys.readouterr().out
    assert "stale    goal: source changed" in out
    assert "{+以+}" in out and "[-该-]{+当+}" in out
    assert cli(content_copy, "status", "en", "--json") == 1
    report = json.loads(capsys.readouterr().out)
    stale = [s for f in report["files"] for s in f["stale"]]
    assert [s["unit"] for s in stale] == ["goal"] and not stale[0]["critical"]


def test_stale_prose_is_marked_and_reported_but_stale_answers_block_the_release(content_copy):
    edit(content_copy, ZH, "学完本课后", "学完本课以后")
    one_pack = dict(
        verify=False, lessons=("lesson03_relu",), locales=("en",)
    )  # the release gate reads all content
    result = build(options_for(content_copy, **one_pack), progress=lambda _: None)
    assert result.fallbacks == [
        {"file": EN, "locale": "en", "unit": "goal", "kind": "stale", "draft": False}
    ]
    with zipfile.ZipFile(
        content_copy / "build" / "dist" / "lesson03_relu-en-exercise.zip"
    ) as archive:
        lesson = archive.read("lesson03_relu-en-exercise/lesson.md").decode()
    assert "⚠ [the translation may be out of date] After this lesson" in lesson
    assert f"| {EN} | goal | stale |" in (content_copy / "build" / "report.md").read_text()
    edit(content_copy, ZH, "1. **输入**：启动", "1. **输入阶段**：启动")
    with pytest.raises(ContentError) as info:
        build(options_for(content_copy, **one_pack), progress=lambda _: None)
    message = str(info.value)
    assert (
        f"{EN}:" in message
        and "questions.q1.answer: stale in en: a release never falls back" in message
    )


def test_bless_restamps_and_keeps_comments_and_layout(content_copy, capsys):
    edit(content_copy, ZH, "学完本课后", "学完本课以后")
    edit(content_copy, EN, "goal: >-", "# a translator's note\ngoal: >-")
    before = (content_copy / EN).read_text(encoding="utf-8")
    assert cli(content_copy, "bless", "en", "--unit", "goal") == 0
    after = (content_copy / EN).read_text(encoding="utf-8")
    assert "# a translator's note\ngoal: >-" in after
    changed = [l for l in after.splitlines() if l not in before.splitlines()]
    assert len(changed) == 1 and changed[0].startswith("  goal: ")
    capsys.readouterr()
    assert cli(content_copy, "status", "en") == 0


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("exercise cell), then run:", "exercise cell) and run:", None),
        (
            '"index {index}: input {input}',
            '"index {idx}: input {input}',
            "placeholders differ from the source",
        ),
        (
            "returns the non-NaN operand; `torch.relu` keeps NaN",
            "returns the non-NaN operand; torch.relu keeps NaN",
            "inline code differ from the source: missing ['torch.relu']",
        ),
        (
            "$\\text{ReLU}(\\text{NaN}) = \\text{NaN}$",
            "$\\text{ReLU}(NaN) = NaN$",
            "math differ from the source",
        ),
        ('X["input x"] --> ReLU[', 'Input["input x"] --> ReLU[', "mermaid node ids differ"),
    ],
)
def test_protected_tokens_are_located_errors(content_copy, old, new, message):
    target = "content/locales/en.yaml" if "index {" in old or "exercise cell)" in old else EN
    edit(content_copy, target, old, new)
    if message is None:
        load_content(content_copy / "content")
        return
    with pytest.raises(ContentError) as info:
        load_content(content_copy / "content")
    found = [str(p) for p in info.value.problems]
    assert any(message in p and p.split(":")[1].isdigit() for p in found), found


def test_link_targets_must_match():
    assert (
        protected_problems(
            "u", "see [the docs](https://a.example/x)", "voir [la doc](https://a.example/x)"
        )
        == []
    )
    assert protected_problems(
        "u", "see [the docs](https://a.example/x)", "voir [la doc](https://b.example/)"
    ) == [
        "link targets differ from the source: missing ['https://a.example/x']; not in the source ['https://b.example/']"
    ]


def test_code_blocks_in_prose_must_tokenize_the_same():
    source = "Run:\n\n```python\nx = f(1)  # 中文\n```\n"
    assert protected_problems("u", source, "Run:\n\n```python\nx = f(1)  # English\n```\n") == []
    assert protected_problems("u", source, "Run:\n\n```python\nx = f(2)\n```\n") == [
        "code block 1 differs from the source's (only comments may be translated)"
    ]


def test_yaml_11_words_stay_text_in_a_translation(content_copy):
    edit(content_copy, EN, '  todo_comment: "TODO: ReLU (replace ______)"', "  todo_comment: no")
    content = load_content(content_copy / "content")
    assert content.lessons["lesson03_relu"].texts["en"].exercise.todo_comment.endswith("no")


def test_third_language_end_to_end_without_code_changes(content_copy, capsys):
    root = content_copy
    assert cli(root, "new", "fr") == 0
    course = root / "content" / "course.yaml"
    assert "locales: [zh-CN, en, fr]\ndrafts: [fr]\n" in course.read_text()
    assert cli(root, "status", "fr") == 1
    edit(root, "content/course.yaml", "drafts: [fr]\n", "")  # published: strict
    with pytest.raises(ContentError):  # answers and checker messages are missing
        build(options_for(root, verify=False), progress=lambda _: None)
    # Translate (here: copy from English) what a release requires, and a few prose units.
    import ruamel.yaml

    yaml = ruamel.yaml.YAML(typ="rt")
    yaml.width = 4096  # no re-wrapping: a line broken inside a double-quoted TeX command changes it
    lessons = [
        (
            EN,
            "content/lessons/lesson03_relu/text.fr.yaml",
            ["questions", "hints", "solution_note", "checker", "goal", "rubric"],
        )
    ]
    lessons += [
        (
            f"content/lessons/{l}/text.en.yaml",
            f"content/lessons/{l}/text.fr.yaml",
            None,
        )  # wholly "translated"
        for l in (
            "lesson02_vector_add",
            "lesson04_add_bias",
            "lesson05_softmax",
            "lesson06_matmul",
            "lesson07_cross_entropy",
        )
    ]
    for rel_en, rel_fr, keys in [
        ("content/locales/en.yaml", "content/locales/fr.yaml", None),
        *lessons,
    ]:
        en, fr = yaml.load((root / rel_en).read_text()), yaml.load((root / rel_fr).read_text())
        for key in keys or [k for k in en if k != "source_hashes"]:
            fr[key] = en[key]
        with open(root / rel_fr, "w") as f:
            yaml.dump(fr, f)
    assert cli(root, "bless", "fr", "--all-stale") == 0
    capsys.readouterr()
    result = build(
        options_for(root, verify=False, locales=("fr",)), progress=lambda _: None
    )  # the others as before
    names = sorted(result.zips)
    assert "lesson03_relu-fr-answer.zip" in names and "lesson03_relu-fr-exercise.zip" in names
    assert "triton_course-fr-answer.zip" in names and all("-fr-" in name for name in names)
    with zipfile.ZipFile(root / "build" / "dist" / "lesson03_relu-fr-exercise.zip") as archive:
        lesson = archive.read("lesson03_relu-fr-exercise/lesson.md").decode()
    assert "After this lesson" in lesson  # translated (copied) unit
    assert "not yet translated; shown in the source language" in lesson
    assert "逐元素" in lesson  # fallback prose from zh-CN, marked
    assert any(f["locale"] == "fr" and f["kind"] == "missing" for f in result.fallbacks)


def test_word_diff_marks_changes():
    assert word_diff("a quick fox", "a slow fox") == "a [-quick-]{+slow+} fox"


# ---- issue 10.1: stamps computed on the fold-marker reading ---------------------------------------

MIGRATION_SOURCE = """\
goal: >-
  fold
  here
kept: >-
  old
  text
plain: one line
code: |
  a
  b
"""


def test_migrate_restamps_only_units_stamped_on_the_old_reading_of_the_same_text(tmp_path):
    from generator.content.i18n import unit_hash
    from generator.content.translate import migrate_file

    content = tmp_path / "content"
    content.mkdir()
    source, translation = content / "src.yaml", content / "tr.yaml"
    source.write_text(MIGRATION_SOURCE.replace("old\n  text", "new\n  text"), encoding="utf-8")
    stamps = {
        "goal": unit_hash("fold\a here"),  # the old reading of the current source: migrate
        "kept": unit_hash("old\a text"),  # the old reading of an older source: stays stale
        "plain": unit_hash("one line"),  # not folded, already right
        "code": unit_hash("a\nb\n"),
    }
    translation.write_text(
        "# translator's note\ngoal: >-\n  Fold\n  here\nkept: Old text\nplain: One line\n"
        "code: |\n  a\n  b\nsource_hashes:\n" + "".join(f"  {u}: {h}\n" for u, h in stamps.items()),
        encoding="utf-8",
    )
    before = translation.read_text(encoding="utf-8")
    assert migrate_file(content, source, translation) == ["goal"]
    after = translation.read_text(encoding="utf-8")
    assert f"  goal: {unit_hash('fold here')}\n" in after
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert changed == [f"  goal: {unit_hash('fold here')}"]  # comments, folds and the rest kept
    assert (content / ".i18n" / "snapshots" / f"{unit_hash('fold here')}.txt").read_text(
        encoding="utf-8"
    ) == "fold here"
    assert migrate_file(content, source, translation) == []  # a second run finds nothing
    assert translation.read_text(encoding="utf-8") == after


def test_migrate_stamps_command_turns_old_reading_stamps_ok(content_copy, capsys):
    """A translation branch stamped before the fix: status says why, migrate-stamps makes it clean."""
    from ruamel.yaml import YAML
    from generator.content.i18n import unit_hash

    root = YAML(typ="rt", pure=True).compose((content_copy / ZH).read_text(encoding="utf-8"))
    old_goal = next(
        v.value for k, v in root.value if k.value == "goal"
    )  # how it was read before 10.1
    assert "\a" in old_goal
    path = content_copy / EN
    text = path.read_text(encoding="utf-8")
    new_stamp = unit_hash(
        old_goal.replace("\a ", "").replace("\a", "")
    )  # its CJK folds joined (issue 39)
    assert f"  goal: {new_stamp}\n" in text
    path.write_text(
        text.replace(f"  goal: {new_stamp}\n", f"  goal: {unit_hash(old_goal)}\n"), encoding="utf-8"
    )
    assert cli(content_copy, "status", "en") == 1
    assert (
        "stale    goal: stamped on the old reading of folded text; run `coursepack i18n migrate-stamps`"
        in capsys.readouterr().out
    )
    assert cli(content_copy, "migrate-stamps") == 0
    assert capsys.readouterr().out.strip() == f"re-stamped {EN}: goal"
    assert cli(content_copy, "status", "en") == 0
    assert path.read_text(encoding="utf-8") == text


def test_old_snapshots_diff_without_fold_markers(tmp_path):
    from generator.content.i18n import load_snapshot, snapshot_dir

    snapshot_dir(tmp_path).mkdir(parents=True)
    (snapshot_dir(tmp_path) / "abc.txt").write_text("one\a two\a\nthree", encoding="utf-8")
    assert load_snapshot(tmp_path, "abc") == "one two\nthree"
