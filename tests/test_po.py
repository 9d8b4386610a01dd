"""The PO route (issue 39): export, import, fuzzy entries, refusals located in the PO file, and
round trips that change no byte. Every exported file must pass GNU gettext's `msgfmt --check` and
load in polib."""

import os
import shutil
import subprocess
from pathlib import Path

import polib
import pytest

from generator.cli import main
from generator.errors import ContentError
from generator.content.i18n import units
from generator.content.po import PoSyntaxError, parse
from generator.content.translate import status
from generator.content.translate_po import export, import_po

ZH = "content/lessons/lesson03_relu/text.zh-CN.yaml"
EN = "content/lessons/lesson03_relu/text.en.yaml"
MSGFMT = shutil.which("msgfmt")


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "content").rglob("*.yaml"))
    }


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def msgfmt_check(paths: list[Path]) -> None:
    """msgfmt --check accepts each file (a template may only keep its Language empty, as xgettext's do)."""
    if MSGFMT is None:
        if os.environ.get("CI") == "true":
            pytest.fail("msgfmt (Debian's gettext) is missing; .ci/run installs it")
        pytest.skip("msgfmt (Debian package gettext) is not installed")
    for path in paths:
        done = subprocess.run(
            [MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True
        )
        allowed = (
            "warning: header field 'Language' still has the initial default value"
            if path.suffix == ".pot"
            else None
        )
        assert done.returncode == 0, (path, done.stderr)
        assert [
            line for line in done.stderr.splitlines() if not (allowed and line.endswith(allowed))
        ] == [], path


def entry(po: polib.POFile, unit: str) -> polib.POEntry:
    return next(e for e in po if e.msgctxt == unit)


def test_export_of_every_file_passes_msgfmt_and_loads_in_polib(content_copy):
    out = content_copy / "po"
    written = export(content_copy / "content", "en", out)
    assert sorted(p.name for p in written) == [
        "course.po",
        "lesson02_vector_add.po",
        "lesson03_relu.po",
        "lesson04_add_bias.po",
        "lesson05_softmax.po",
        "lesson06_matmul.po",
        "lesson07_cross_entropy.po",
    ]
    msgfmt_check(written)
    po = polib.pofile(str(out / "lesson03_relu.po"))
    source = units(
        __import__("yaml").load(
            (content_copy / ZH).read_text(encoding="utf-8"), Loader=__import__("yaml").CBaseLoader
        )
    )
    assert len(po) == len([u for u in source if u != "source_hashes"])
    assert (
        po.metadata["Language"] == "en"
        and po.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    )
    goal = entry(po, "goal")
    assert goal.msgstr.startswith("After this lesson") and not goal.fuzzy
    assert goal.occurrences == [(ZH, "7")]
    answer = entry(po, "questions.q1.answer")
    assert "reference answer: only in the answer pack" in answer.comment
    assert "a release needs this unit translated and current" in answer.comment


def test_a_stale_unit_is_fuzzy_with_its_previous_source(content_copy):
    old = "学完本课后，你应该能用 Triton 写出 ReLU 内核"
    edit(content_copy, ZH, "学完本课后，你应该能", "学完本课以后，你应当能")
    written = export(content_copy / "content", "en", content_copy / "po", ["lesson03_relu"])
    msgfmt_check(written)
    goal = entry(polib.pofile(str(written[0])), "goal")
    assert (
        goal.fuzzy and goal.previous_msgid.startswith(old) and goal.msgid.startswith("学完本课以后")
    )
    assert goal.msgstr.startswith("After this lesson")
    assert "#| msgid " in written[0].read_text(encoding="utf-8")


def test_export_then_import_changes_no_byte_even_after_a_po_library_rewrote_it(content_copy):
    edit(content_copy, ZH, "学完本课后", "学完本课以后")  # one stale unit, exported fuzzy
    before = snapshot(content_copy)
    out = content_copy / "po"
    export(content_copy / "content", "en", out)
    assert import_po(content_copy / "content", "en", [out]).written == []
    for path in out.glob("*.po"):  # as Poedit would write it: rewrapped lines, reordered headers
        po = polib.pofile(str(path), wrapwidth=30)
        po.metadata = dict(reversed(list(po.metadata.items())))
        po.save(str(path))
    assert import_po(content_copy / "content", "en", [out]).written == []
    assert snapshot(content_copy) == before


def test_import_sets_each_units_state_and_keeps_the_yaml_layout(content_copy):
    root = content_copy
    edit(root, ZH, "学完本课后", "学完本课以后")
    edit(root, EN, "goal: >-", "# a translator's note\ngoal: >-")
    out = root / "po"
    export(root / "content", "en", out, ["lesson03_relu"])
    path = out / "lesson03_relu.po"
    po = polib.pofile(str(path))
    goal = entry(po, "goal")
    goal.msgstr = "Once this lesson is done, you can write a ReLU kernel in Triton."
    goal.flags.remove("fuzzy")  # reviewed against the new source: current
    entry(
        po, "prerequisites"
    ).msgstr = "Python and PyTorch tensors."  # edited and left fuzzy: stale
    entry(po, "prerequisites").flags.append("fuzzy")
    po.save(str(path))
    result = import_po(root / "content", "en", [path])
    assert (
        result.written == [root / EN]
        and result.counts["current"] >= 1
        and result.counts["fuzzy"] == 1
    )
    text = (root / EN).read_text(encoding="utf-8")
    assert "# a translator's note\ngoal: " in text and "Once this lesson is done" in text
    report = status(root / "content", "en")
    stale = {s["unit"] for f in report["files"] for s in f["stale"]}
    assert stale == {"prerequisites"}


def test_a_unit_whose_source_changed_since_the_export_is_refused_the_others_imported(
    content_copy, capsys
):
    root = content_copy
    out = root / "po"
    export(root / "content", "en", out, ["lesson03_relu"])
    po = polib.pofile(str(out / "lesson03_relu.po"))
    entry(po, "goal").msgstr = "A new goal."
    entry(po, "edition_note_exercise").msgstr = "A new note."
    po.save(str(out / "lesson03_relu.po"))
    edit(root, ZH, "学完本课后", "学完本课以后")  # the source moves on after the export
    assert main(["i18n", "import", "en", str(out), "--content", str(root / "content")]) == 1
    printed = capsys.readouterr().out
    assert (
        "refused po/lesson03_relu.po:" in printed.replace(str(root) + "/", "")
        and "goal: the source text changed" in printed
    )
    text = (root / EN).read_text(encoding="utf-8")
    assert "A new note." in text and "A new goal." not in text


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda po: setattr(entry(po, "checker.mismatch"), "msgstr", "index {idx}"),
            "placeholders differ",
        ),
        (
            lambda po: setattr(entry(po, "goal"), "msgstr", "Write `relu` in Triton."),
            "inline code differ",
        ),
        (
            lambda po: setattr(entry(po, "goal"), "msgctxt", "no_such_unit"),
            "no unit 'no_such_unit'",
        ),
        (lambda po: po.metadata.update({"Language": "fr"}), "expected en"),
    ],
)
def test_an_invalid_po_is_refused_with_its_line_and_nothing_is_written(
    content_copy, change, message
):
    root = content_copy
    out = root / "po"
    export(root / "content", "en", out)
    target = "course.po" if "index" in message or "placeholders" in message else "lesson03_relu.po"
    po = polib.pofile(str(out / target))
    entry(po, "goal" if target == "lesson03_relu.po" else next(e.msgctxt for e in po)).msgstr += " "
    change(po)
    po.save(str(out / target))
    before = snapshot(root)
    with pytest.raises(ContentError) as info:
        import_po(root / "content", "en", [out])
    problems = [str(p) for p in info.value.problems]
    assert any(
        message in p and p.split(":")[0].endswith(target) and p.split(":")[1].isdigit()
        for p in problems
    ), problems
    assert snapshot(root) == before


def test_bad_po_syntax_is_located(content_copy):
    root = content_copy
    bad = root / "lesson03_relu.po"
    bad.write_text(
        'msgid ""\nmsgstr "Language: en\\n"\n\nmsgctxt "goal"\nmsgid "x\nmsgstr "y"\n',
        encoding="utf-8",
    )
    with pytest.raises(ContentError) as info:
        import_po(root / "content", "en", [bad])
    assert "lesson03_relu.po:5:1: PO syntax: expected a string in double quotes" in str(info.value)


def test_pot_templates_for_a_language_not_started(content_copy):
    written = export(content_copy / "content", None, content_copy / "pot")
    assert all(p.suffix == ".pot" for p in written)
    msgfmt_check(written)
    po = polib.pofile(str(written[0]))
    assert all(e.msgstr == "" and not e.fuzzy for e in po)


def test_parse_reads_what_gettext_writes():
    text = (
        '# comment\nmsgid ""\nmsgstr ""\n"Language: ja\\n"\n\n#. note\n#: a.yaml:3\n#, fuzzy\n'
        '#| msgctxt "k"\n#| msgid "o"\n#| "ld"\nmsgctxt "k"\nmsgid ""\n"two\\n"\n"lines \\"q\\" \\t\\\\"\n'
        'msgstr "zwei"\n\n#~ msgid "gone"\n#~ msgstr "weg"\n'
    )
    fields, line, entries = parse(text)
    assert fields == {"Language": "ja"} and line == 2
    (one,) = entries
    assert (one.msgctxt, one.msgid, one.msgstr, one.previous_msgid) == (
        "k",
        'two\nlines "q" \t\\',
        "zwei",
        "old",
    )
    assert (
        one.fuzzy
        and one.extracted == ["note"]
        and one.references == ["a.yaml:3"]
        and one.line == 12
    )
    with pytest.raises(PoSyntaxError) as info:
        parse('msgid "a"\nmsgid_plural "b"\nmsgstr[0] ""\n')
    assert info.value.line == 2 and "plural" in info.value.message


def test_source_text_copied_into_msgstr_is_saved_but_not_counted_as_translated(content_copy):
    root = content_copy
    assert main(["i18n", "new", "ja", "--content", str(root / "content")]) == 0
    out = root / "po"
    export(root / "content", "ja", out, ["lesson03_relu"])
    po = polib.pofile(str(out / "lesson03_relu.po"))
    goal, url = entry(po, "goal"), entry(po, "references.0.url")
    goal.msgstr, url.msgstr = goal.msgid, url.msgid  # Poedit's "copy source"
    po.save(str(out / "lesson03_relu.po"))
    result = import_po(root / "content", "ja", [out])
    assert result.counts["same as the source (not stamped)"] == 1 and result.counts["current"] == 1
    (lesson,) = [
        f
        for f in status(root / "content", "ja")["files"]
        if f["file"].endswith("lesson03_relu/text.ja.yaml")
    ]
    assert [s["unit"] for s in lesson["stale"]] == ["goal"] and lesson[
        "ok"
    ] == 1  # the URL is the same in every language


from hypothesis import given, settings, strategies as st  # noqa: E402

TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\n\t"), max_size=60
)


@settings(max_examples=200, deadline=None)
@given(context=TEXT.filter(bool), msgid=TEXT, msgstr=TEXT)
def test_what_dump_writes_parse_reads_back(context, msgid, msgstr):
    from generator.content.po import Entry, dump

    text = dump(
        {"Language": "ja"},
        [Entry(msgid, msgstr, context, ["a note"], ["x.yaml:1"], ["fuzzy"], msgid + "!")],
        ["a comment"],
    )
    fields, _, (entry,) = parse(text)
    assert fields == {"Language": "ja"}
    assert (entry.msgctxt, entry.msgid, entry.msgstr, entry.previous_msgid) == (
        context,
        msgid,
        msgstr,
        msgid + "!",
    )
    assert polib.pofile(text)[0].msgstr == msgstr
