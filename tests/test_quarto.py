"""The course as a Quarto website project (issue 27).

The Quarto CLI cannot be installed on these machines (its PyPI package downloads the binary at
install time), so nothing here renders a site. What can be checked without it is: every page
parses with pandoc (Debian's package; Quarto reads pages with pandoc's Markdown) into the expected
structure; the project's configuration validates against Quarto's own schema (vendored in
tests/schemas/quarto, with its version); links resolve; answer material sits only where the answer
profile shows it. Without pandoc these tests skip with that reason, except under CI=true.
"""

from __future__ import annotations

import copy
import difflib
import io
import json
import os
import posixpath
import re
import shutil
import subprocess
import zipfile
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest

from generator.content.loader import load_content
from ruamel.yaml import YAML

from generator.files.archive import zip_pack
from generator.gate.leaks import fingerprints, normalise, scan_files
from generator.content.markdown import parse
from generator.files.pack import Pack, manifest
from generator.gate.quarto_leaks import project_leaks
from tests.quarto_project import quarto_projects
from generator.render.quarto import ANSWER_DIR, as_written, exercise_view
from generator.render.render import jinja_env
from tests.conftest import REPO, unzip

SCHEMAS = Path(__file__).resolve().parent / "schemas" / "quarto"
PANDOC = shutil.which("pandoc")
BENCH = {
    "device": "NVIDIA H200",
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
    "n": 268435456,
    "tables": {
        "blocks": [
            {"name": "device copy", "ms": 0.5059, "gbps": 4245.2, "vs_copy": 1.0},
            {"name": "relu.py, BLOCK=1024", "ms": 0.5087, "gbps": 4221.7, "vs_copy": 0.994},
        ],
        "fusion": [
            {"name": "device copy", "ms": 0.5086, "gbps": 4222.0, "vs_copy": 1.0},
            {"name": "fused.py bias_relu", "ms": 0.508, "gbps": 4226.8, "vs_copy": 1.0},
        ],
    },
    "checks": {"nan kept": True},
}
RECORD = {
    "runner_label": "CUDA",
    "device": "NVIDIA H200",
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
    "date": "2026-11-29",
    "passed": True,
    "bench": BENCH,
}  # no "values": the text keeps its markers


@pytest.fixture(scope="module")
def course():
    from tests.golden_update import real_course

    return real_course()


@pytest.fixture(scope="module")
def projects(course) -> dict[str, Pack]:
    """Each locale's project, lesson 3 with a GPU verification record (its measured tables)."""
    content, groups = course
    records = {key: RECORD for key in groups if key[0] == "lesson03_relu"}
    return {
        p.locale: p
        for p in quarto_projects(content, groups, records, jinja_env(REPO / "templates"))
    }


def pandoc_json(text: str) -> dict:
    if not PANDOC:
        if os.environ.get("CI") == "true":
            pytest.fail("pandoc is missing (apt-get install pandoc; .ci/run installs it)")
        pytest.skip(
            "needs pandoc (Debian: apt-get install pandoc); the Quarto CLI cannot be installed here"
        )
    done = subprocess.run(
        [PANDOC, "-f", "markdown", "-t", "json"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def parsed(projects) -> dict[tuple[str, str], dict]:
    """Every page of every project as pandoc reads it."""
    return {
        (locale, name): pandoc_json(data.decode("utf-8"))
        for locale, project in projects.items()
        for name, data in sorted(project.files.items())
        if name.endswith(".qmd")
    }


def nodes(node, profiles=()):
    """(element, the profiles of the content-visible blocks around it), in document order."""
    if isinstance(node, list):
        for item in node:
            yield from nodes(item, profiles)
    elif isinstance(node, dict) and "t" in node:
        yield node, profiles
        inner = profiles
        if node["t"] == "Div":
            (_, classes, attrs), _ = node["c"]
            if "content-visible" in classes:
                inner = profiles + (dict(attrs).get("when-profile"),)
        if node["t"] != "Cite":
            yield from nodes(node.get("c"), inner)


def divs(doc, cls):
    return [(n, p) for n, p in nodes(doc["blocks"]) if n["t"] == "Div" and cls in n["c"][0][1]]


def text_of(node) -> str:
    return "".join(
        n["c"] if n["t"] == "Str" else " "
        for n, _ in nodes(node)
        if n["t"] in ("Str", "Space", "SoftBreak")
    )


def cell_options(code: str) -> dict:
    """A mermaid cell's `%%|` options, read as Quarto reads them (YAML)."""
    lines = [line[3:].strip() for line in code.splitlines() if line.startswith("%%|")]
    return YAML(typ="safe").load("\n".join(lines)) or {}


# --- structure ---------------------------------------------------------------------------------


def test_every_page_parses_into_the_expected_structure(course, parsed, capsys):
    content, _ = course
    summary = []
    measured_heading = {
        locale: text_of(pandoc_json(content.locales[locale].headings.measured)["blocks"])
        for locale in content.course.locales
    }
    for (locale, name), doc in parsed.items():
        if name == "index.qmd":
            links = [n["c"][2][0] for n, _ in nodes(doc["blocks"]) if n["t"] == "Link"]
            assert links == [f"{lesson.spec.id}/lesson.qmd" for lesson in content.published]
            continue
        lesson = content.lessons[name.split("/")[0]]
        text, heading = lesson.texts[locale], measured_heading[locale]
        assert doc["meta"]["title"]["t"] == "MetaInlines"
        visible = divs(doc, "content-visible")
        profiles = [dict(n["c"][0][2])["when-profile"] for n, _ in visible]
        assert set(profiles) == {"exercise", "answer"} and all(
            not outer for _, outer in visible
        )  # never nested
        # edition notes: a callout each, in its own profile
        notes = {
            cls: [p for _, p in divs(doc, cls)] for cls in ("callout-note", "callout-important")
        }
        assert notes == {"callout-note": [("exercise",)], "callout-important": [("answer",)]}
        # hints: collapsed callouts, the last level in the answer profile only
        hints = [
            (n, p)
            for n, p in divs(doc, "callout-tip")
            if dict(n["c"][0][2]).get("collapse") == "true"
        ]
        assert [p for _, p in hints] == [()] * 3 + [("answer",)]
        assert all(n["c"][1][0]["t"] == "Header" for n, _ in hints)  # the callout's title
        # reference answers: a callout each, answer profile only
        answers = [
            (n, p) for n, p in divs(doc, "callout-tip") if "collapse" not in dict(n["c"][0][2])
        ]
        references = len(lesson.spec.questions) + sum(
            1 for part in text.rubric.parts.values() if part.reference
        )
        assert len(answers) == references and all(
            p == ("answer",) for _, p in answers
        )  # and the explanation's
        # figures: {mermaid} cells with a fig- label and a caption; every cross-reference resolves
        cells = [
            n
            for n, _ in nodes(doc["blocks"])
            if n["t"] == "CodeBlock" and n["c"][0][1] == ["{mermaid}"]
        ]
        options = [cell_options(n["c"][1]) for n in cells]
        labels = [o["label"] for o in options]
        assert len(cells) == len(lesson.spec.figures) and len(set(labels)) == len(labels)
        assert all(
            label.startswith("fig-") and o["fig-cap"].strip() for label, o in zip(labels, options)
        )
        assert [o["fig-cap"] for o in options] == [
            re.split("[:：]", text.figures[f].caption, maxsplit=1)[1].strip()
            for f in lesson.spec.figures
        ]  # Quarto writes "Figure N:"
        cites = [n["c"][0][0]["citationId"] for n, _ in nodes(doc["blocks"]) if n["t"] == "Cite"]
        assert cites and set(cites) <= set(labels), (
            name,
            cites,
        )  # no other citation: each @ is a figure's
        assert set(labels) <= set(cites)  # every figure is referred to
        # math: Quarto math, no dollar sign left over as text
        maths = [n for n, _ in nodes(doc["blocks"]) if n["t"] == "Math"]
        strays = [n["c"] for n, _ in nodes(doc["blocks"]) if n["t"] == "Str" and "$" in n["c"]]
        assert maths and strays == [], strays
        # the measured tables: in the answer profile, where the lesson was measured
        tables = [p for n, p in nodes(doc["blocks"]) if n["t"] == "Table"]
        measured = [
            p
            for n, p in nodes(doc["blocks"])
            if n["t"] == "Header" and text_of(n["c"][2]) == heading
        ]
        assert measured == ([("answer",)] if lesson.spec.id == "lesson03_relu" else [])
        assert tables.count(("answer",)) >= len(BENCH["tables"]) * len(measured)
        summary.append(
            f"{locale} {name}: {profiles.count('exercise')} exercise-profile and {profiles.count('answer')} "
            f"answer-profile blocks; callouts: 1 note + 1 important (edition notes), {len(hints)} collapsed "
            f"hints (last in answer profile), {len(answers)} reference answers (answer profile); figures "
            f"{labels} with captions; {len(cites)} @fig- cross-references, all resolved; {len(maths)} math; "
            + ("the measured section (answer profile)" if measured else "no measurements")
        )
    with capsys.disabled():
        print(
            "\npandoc "
            + subprocess.run([PANDOC, "--version"], capture_output=True, text=True).stdout.split()[
                1
            ]
            + " reads every page:\n"
            + "\n".join(summary)
        )


def test_pandoc_and_commonmark_agree_on_every_page(projects, parsed):
    """Lesson text is written for CommonMark (lesson.md, the page, the notebook); Quarto reads it
    as pandoc's Markdown. Both must see the same lists, code blocks, tables and headings."""

    def pandoc_counts(doc):
        found = [n for n, _ in nodes(doc["blocks"])]
        return {
            "items": sum(
                len(n["c"]) if n["t"] == "BulletList" else len(n["c"][1])
                for n in found
                if n["t"] in ("BulletList", "OrderedList")
            ),
            "code": sum(n["t"] == "CodeBlock" for n in found),
            "tables": sum(n["t"] == "Table" for n in found),
            "headings": sum(n["t"] == "Header" for n in found),
        }

    for (locale, name), doc in parsed.items():
        tokens = parse(projects[locale].files[name].decode("utf-8").split("\n---\n", 1)[1])
        commonmark = {
            "items": sum(t.type == "list_item_open" for t in tokens),
            "code": sum(t.type in ("fence", "code_block") for t in tokens),
            "tables": sum(t.type == "table_open" for t in tokens),
            "headings": sum(t.type == "heading_open" for t in tokens),
        }
        assert pandoc_counts(doc) == commonmark, (locale, name)


def test_links_between_pages_and_to_downloads_resolve(course, projects, parsed):
    content, _ = course
    ids = [lesson.spec.id for lesson in content.published]
    for (locale, name), doc in parsed.items():
        files = projects[locale].files
        folder = posixpath.dirname(name)
        targets = [(n["c"][2][0], p) for n, p in nodes(doc["blocks"]) if n["t"] == "Link"]
        local = [
            (posixpath.normpath(posixpath.join(folder, t)), p) for t, p in targets if "://" not in t
        ]
        assert local and all(path in files for path, _ in local), (name, local)
        for path, profiles in local:  # answer-only files are linked from the answer profile alone
            if ANSWER_DIR in path.split("/"):
                assert profiles == ("answer",), (name, path)
        if name != "index.qmd":
            index = ids.index(folder)
            pages = [path for path, _ in local if path.endswith("lesson.qmd")]
            assert pages == [
                f"{other}/lesson.qmd"
                for other in ids[max(index - 1, 0) : index + 2]
                if other != folder
            ]


# --- answers only in the answer profile ----------------------------------------------------------


def test_answer_material_is_inside_answer_blocks_only(course, projects):
    """Every answer fingerprint of a lesson is in its page or answer/ folder, and none is left once
    the answer-profile blocks and answer/ are taken away."""
    content, _ = course
    for locale, project in projects.items():
        for lesson in content.published:
            prints = fingerprints(lesson, locale)
            page = project.files[f"{lesson.spec.id}/lesson.qmd"].decode("utf-8")
            answer_files = [
                data.decode("utf-8")
                for name, data in project.files.items()
                if name.startswith(f"{lesson.spec.id}/{ANSWER_DIR}/")
            ]
            everything = normalise("\n".join([as_written(page, lesson, locale), *answer_files]))
            shown = [
                fp for fp in prints if "[[measured:" not in fp.text
            ]  # filled with the bench's numbers
            assert all(fp.text in everything for fp in shown), [
                fp.source for fp in shown if fp.text not in everything
            ]
            view = as_written(exercise_view(page), lesson, locale)
            assert scan_files({"lesson.qmd": view.encode()}, prints, project.name) == []
        assert project_leaks(content, locale, zip_pack(project), project.name) == []


def test_the_exercise_view_is_what_pandoc_sees_outside_answer_blocks(projects, parsed):
    """The leak scan reads pages without their answer blocks by itself (the build has no pandoc):
    it removes exactly what pandoc would."""

    def without_answers(blocks):
        kept = []
        for block in blocks:
            if block["t"] == "Div":
                (_, classes, attrs), inner = block["c"]
                if "content-visible" in classes and dict(attrs).get("when-profile") == "answer":
                    continue
                block = {"t": "Div", "c": [block["c"][0], without_answers(inner)]}
            kept.append(block)
        return kept

    def plain(node):  # header ids and citation numbers count what came before: not the content
        if isinstance(node, list):
            return [plain(item) for item in node]
        if isinstance(node, dict):
            if node.get("t") == "Header":
                return {
                    "t": "Header",
                    "c": [node["c"][0], ["", *node["c"][1][1:]], plain(node["c"][2])],
                }
            return {k: 0 if k == "citationNoteNum" else plain(v) for k, v in node.items()}
        return node

    for (locale, name), doc in parsed.items():
        view = pandoc_json(exercise_view(projects[locale].files[name].decode("utf-8")))
        assert plain(view["blocks"]) == plain(without_answers(doc["blocks"])), (locale, name)


def _with(project: Pack, **changes: bytes) -> bytes:
    changed = Pack(project.lesson_id, project.locale, project.edition, {**project.files, **changes})
    changed.files["manifest.json"] = manifest(changed, None)
    return zip_pack(changed)


def test_answer_material_outside_an_answer_block_is_a_leak(course, projects):
    content, _ = course
    project = projects["en"]
    page = project.files["lesson03_relu/lesson.qmd"].decode("utf-8")
    answer = content.lessons["lesson03_relu"].texts["en"].questions["q2"].answer
    block = f'\n:::: {{.content-visible when-profile="answer"}}\n{answer}\n::::\n'

    def leaks(**changes):
        return project_leaks(content, "en", _with(project, **changes), "p.zip")

    assert leaks(**{"lesson03_relu/lesson.qmd": (page + block).encode()}) == []
    assert leaks(**{"lesson03_relu/lesson.qmd": (page + "\n" + answer + "\n").encode()})
    exercise_block = block.replace('"answer"', '"exercise"')
    assert leaks(**{"lesson03_relu/lesson.qmd": (page + exercise_block).encode()})
    opener = ':::: {.content-visible when-profile="answer"}\n::: {.callout-tip}\n'
    assert opener in page
    closed_early = page.replace(
        opener, opener.replace("\n", "\n::::\n", 1), 1
    )  # a stray line ends the block
    assert leaks(**{"lesson03_relu/lesson.qmd": closed_early.encode()})
    assert leaks(**{"lesson03_relu/lesson.qmd": (page + "\n[x](answer/relu.py)\n").encode()})
    assert leaks(**{"lesson03_relu/notes.py": project.files[f"lesson03_relu/{ANSWER_DIR}/relu.py"]})
    assert leaks(**{"index.qmd": project.files["index.qmd"] + answer.encode()})


# --- configuration against Quarto's schema ------------------------------------------------------


def _closed(schema):
    """Quarto's JSON export as Quarto means it (tests/schemas/quarto/README.md): its non-standard
    {"object": {...}} becomes a JSON Schema object whose keys are the declared ones."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _closed(value) for key, value in schema.items()}
    if set(schema) == {"object"}:
        body = dict(schema["object"])
        body["required"] = body.get("required") or []
        if body.get("properties"):
            body.setdefault("additionalProperties", False)
        return {"type": "object", **body}
    return schema


def _from_quarto(schema):
    """One entry of Quarto's YAML schema language, as src/core/schema/json-schema-from-schema.ts
    converts it (the forms options.yml uses)."""
    if isinstance(schema, str):
        return {
            "number": {"type": "number"},
            "boolean": {"type": "boolean"},
            "string": {"type": "string"},
            "path": {"type": "string"},
            "object": {"type": "object"},
            "any": {},
        }[schema]
    if "schema" in schema:
        return _from_quarto(schema["schema"])
    if "enum" in schema:
        return {"enum": list(schema["enum"])}
    if "anyOf" in schema:
        return {"anyOf": [_from_quarto(s) for s in schema["anyOf"]]}
    if "arrayOf" in schema:
        return {"type": "array", "items": _from_quarto(schema["arrayOf"])}
    if "maybeArrayOf" in schema:
        items = _from_quarto(schema["maybeArrayOf"])
        return {"anyOf": [{"type": "array", "items": items}, items]}
    raise AssertionError(f"a schema form this test does not read: {schema}")


@lru_cache(maxsize=1)
def quarto_schema() -> tuple[dict, dict]:
    """(the keys of _quarto.yml and its profile files -> a validator; each option -> a validator)."""
    published = _closed(json.loads((SCHEMAS / "json-schemas.json").read_text(encoding="utf-8")))

    def definition(name):
        return jsonschema.Draft202012Validator(
            {
                "$schema": published["$schema"],
                "$defs": published["$defs"],
                "$ref": f"#/$defs/{name}",
            }
        )

    options = {
        entry["name"]: jsonschema.Draft202012Validator(_from_quarto(entry))
        for entry in YAML(typ="safe").load((SCHEMAS / "options.yml").read_text(encoding="utf-8"))
    }
    return {
        "project": definition("ProjectConfig"),
        "website": definition("BaseWebsite"),
        "profile": definition("ProjectProfile"),
    }, options


def schema_errors(config: dict) -> list[str]:
    keys, options = quarto_schema()
    found = []
    for key, value in config.items():
        if key == "format":
            for fmt, settings in value.items():
                if fmt != "html":
                    found.append(f"format.{fmt}: not a format this test validates")
                    continue
                for option, setting in settings.items():
                    if option not in options:
                        found.append(f"format.html.{option}: not an option this test validates")
                        continue
                    found += [
                        f"format.html.{option}: {e.message}"
                        for e in options[option].iter_errors(setting)
                    ]
        elif key in keys:
            found += [
                f"{key}.{'.'.join(map(str, e.absolute_path))}: {e.message}"
                for e in keys[key].iter_errors(value)
            ]
        elif key in options:
            found += [f"{key}: {e.message}" for e in options[key].iter_errors(value)]
        else:
            found.append(f"{key}: not a key this test validates")
    return found


def _yaml(data: bytes) -> dict:
    return YAML(typ="safe").load(data.decode("utf-8"))


def test_configuration_validates_against_quartos_schema(course, projects, parsed):
    content, _ = course
    pages = [f"{lesson.spec.id}/lesson.qmd" for lesson in content.published]
    for locale, project in projects.items():
        files = project.files
        config = _yaml(files["_quarto.yml"])
        assert set(config) == {"project", "profile", "website", "lang", "format"}
        assert schema_errors(config) == []
        assert config["project"]["type"] == "website" and config["project"]["render"] == [
            "index.qmd",
            *pages,
        ]
        assert config["profile"] == {"default": "exercise", "group": [["exercise", "answer"]]}
        assert [item["href"] for item in config["website"]["sidebar"]["contents"]] == [
            "index.qmd",
            *pages,
        ]
        assert config["lang"] == locale
        profile = {p: _yaml(files[f"_quarto-{p}.yml"]) for p in ("exercise", "answer")}
        for name, settings in profile.items():
            assert set(settings) == {"project", "website"} and schema_errors(settings) == [], name
            assert all(path in files for path in settings["project"]["resources"])
        assert (
            profile["exercise"]["project"]["output-dir"]
            != profile["answer"]["project"]["output-dir"]
        )
        assert not any(
            ANSWER_DIR in path.split("/") for path in profile["exercise"]["project"]["resources"]
        )
        assert {p for p in files if ANSWER_DIR in p.split("/")} <= set(
            profile["answer"]["project"]["resources"]
        )
        for name in ["index.qmd", *pages]:  # each page's front matter, each figure cell's options
            front = _yaml(files[name].split(b"\n---\n", 1)[0].removeprefix(b"---\n"))
            assert front and schema_errors(front) == [], name
        for doc_name in pages:
            for n, _ in nodes(parsed[(locale, doc_name)]["blocks"]):
                if n["t"] == "CodeBlock" and n["c"][0][1] == ["{mermaid}"]:
                    assert schema_errors(cell_options(n["c"][1])) == []


def test_the_schema_check_has_teeth(projects):
    config = _yaml(projects["en"].files["_quarto.yml"])
    wrong = copy.deepcopy(config)
    wrong["website"]["sidebar"]["style"] = "sideways"
    assert any("sideways" in e for e in schema_errors(wrong))
    unknown = copy.deepcopy(config)
    unknown["website"]["sidebar"]["contents"][1]["hreff"] = "x.qmd"
    assert schema_errors(unknown)
    wrong_type = copy.deepcopy(config)
    wrong_type["project"]["render"] = "index.qmd"
    wrong_type["profile"]["default"] = 3
    assert len(schema_errors(wrong_type)) == 2
    assert schema_errors({"format": {"html": {"toc": "yes"}}, "lang": 1}) != []


# --- the build -----------------------------------------------------------------------------------


def test_projects_match_their_golden_trees():
    """The pages and configuration against tests/golden_quarto (`make golden` rewrites them)."""
    from tests.golden_update import QUARTO_GOLDEN, current_projects

    projects = current_projects()
    assert sorted(projects) == sorted(p.name for p in QUARTO_GOLDEN.iterdir()), (
        "run `make golden` and review"
    )
    for name, files in projects.items():
        folder = QUARTO_GOLDEN / name
        expected = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*")
            if p.is_file()
        }
        assert sorted(files) == sorted(expected), (
            "files differ from the golden tree; run `make golden` if intended"
        )
        for file in sorted(files):
            if files[file] != expected[file]:
                diff = "\n".join(
                    list(
                        difflib.unified_diff(
                            expected[file].decode().splitlines(),
                            files[file].decode().splitlines(),
                            f"golden_quarto/{name}/{file}",
                            f"generated/{name}/{file}",
                            lineterm="",
                        )
                    )[:40]
                )
                pytest.fail(
                    f"{name}/{file} differs from its golden copy (run `make golden` if intended):\n{diff}"
                )


def test_projects_are_deterministic(course, projects):
    content, groups = course
    again = quarto_projects(
        content,
        dict(reversed(list(groups.items()))),
        {key: copy.deepcopy(RECORD) for key in groups if key[0] == "lesson03_relu"},
        jinja_env(REPO / "templates"),
    )
    assert {p.locale: zip_pack(p) for p in again} == {
        locale: zip_pack(p) for locale, p in projects.items()
    }


def test_a_full_build_writes_one_project_per_locale_marked_for_instructors(built, tmp_path):
    report = (built / "report.md").read_text(encoding="utf-8")
    data = json.loads((built / "report.json").read_text(encoding="utf-8"))
    names = [f"triton_course-{locale}-quarto.zip" for locale in ("zh-CN", "en")]
    assert sorted(data["instructor_only"]) == sorted(names)
    assert "Instructor material, not for students" in report and all(
        name in report for name in names
    )
    for name in names:
        root = unzip(built / "dist" / name, tmp_path)
        assert (root / "README.md").read_text(encoding="utf-8").count("Instructor material") == 1
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        published = [
            e.id
            for e in load_content(built.parent / "content").course.lessons
            if e.status == "published"
        ]
        assert manifest["verification"] == {
            "holds_answers": True,
            "lessons": {lesson: "verified" for lesson in published},
        }
        with zipfile.ZipFile(io.BytesIO((built / "dist" / name).read_bytes())) as archive:
            assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())


def test_a_build_scans_each_lesson_folder_as_it_makes_it(course, tmp_path):
    """quarto_lesson (a build's worker) finds what project_leaks would: here a template that prints
    a reference answer outside the answer profile's blocks."""
    from generator.release.quarto import quarto_lesson

    content, groups = course
    lesson = content.lessons["lesson03_relu"]
    packs = {edition: pack for edition, (_, pack) in groups[("lesson03_relu", "en")].items()}
    assert (
        quarto_lesson(content, lesson, "en", packs, None, jinja_env(REPO / "templates")).leaks == []
    )
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    page = templates / "quarto" / "lesson.qmd.j2"
    page.write_text(
        page.read_text(encoding="utf-8") + "\n{{ text.questions.q2.answer }}\n", encoding="utf-8"
    )
    made = quarto_lesson(content, lesson, "en", packs, None, jinja_env(templates))
    assert made.leaks and all(
        "questions.q2.answer" in leak and "outside the answer profile" in leak
        for leak in made.leaks
    ), made.leaks
    assert [entry.name for entry, _ in made.entries][:1] == ["lesson03_relu/answer/check.py"]
