"""The lesson a class is graded on, from the instructor's content (no build needed): the exercise
edition's check.py in every language (rendered in memory, as a build would write it), the texts
of grading in every language, and the declared mistakes.

The submissions run against the course's source language's check.py; its sha256 is the checker
hash that results are cached by. The other languages' checkers differ only in their messages:
they re-render a result's lines in a student's language without running anything again.

A grading kit (kit_json/load_kit, one JSON file) is the same without the content: the exercise
checkers, the texts and the lesson's description with its declared mistakes left out. It is what
a Gradescope autograder ships (scripts/gradescope_autograder.py), so that no answer is in a
container where students' code runs."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from generator.errors import CoursepackError
from generator.content.model import LessonSpec, Mistake
from generator.gate.verify import expected_failures


class GradeError(CoursepackError):
    """Grading cannot run as asked (a lesson that does not exist, a sandbox that cannot start ...)."""


# Every text of grading, per language (content/locales/<locale>.yaml, `grade:`).
TEXT_KEYS = (
    "feedback_title",
    "student",
    "status",
    "points",
    "points_value",
    "question_span",
    "graded_on",
    "graded_env",
    "sandbox",
    "sandbox_on",
    "sandbox_off",
    "interpreter_note",
    "graded_file",
    "output_heading",
    "notes_heading",
    "status_graded",
    "status_no_submission",
    "status_unreadable",
    "status_crashed",
    "status_timed_out",
    "status_sandbox_violation",
    "flag_claim_differs",
    "flag_other_code",
    "flag_late",
    "flag_not_in_roster",
    "flag_task_failed",
    "name_edits_outside_blank",
    "name_no_triton",
    "name_claim_differs",
    "name_sandbox_events",
    "name_patched",
    "name_inputs_modified",
    "name_protocol",
    "name_blank",
    "name_late",
    "name_other_code",
    "name_not_in_roster",
    "name_sandbox_off",
    "name_withheld",
    "name_fill_not_triton",
    "name_unreviewed",
    "name_torch_computes",
    "name_cases_not_run",
    "unreadable_zip",
    "unreadable_text",
    "unreadable_notebook",
    "unreadable_report",
    "too_large",
    "no_code",
    "empty",
    "ambiguous",
    "no_submission",
    "kind_error",
    "kind_timeout",
    "kind_crash",
    "kind_fault",
    "kind_wrong_shape",
    "kind_wrong_dtype",
    "kind_not_tensor",
    "kind_load_error",
    "kind_blank",
    "group_normal",
    "group_boundary",
    "case_count",
    "summary_title",
    "summary_intro",
    "summary_statuses",
    "summary_distribution",
    "chart_points",
    "chart_students",
    "summary_cases",
    "summary_reasons",
    "summary_reasons_none",
    "reason_line",
    "reason_matches",
    "summary_mistakes",
    "summary_mistakes_none",
    "mistake_line",
    "summary_flags",
    "summary_flags_none",
    "col_case",
    "col_group",
    "col_passed",
    "col_failed",
    "col_skipped",
    "col_rate",
    "col_students",
    "col_status",
    "col_points",
    "col_flag",
    "col_cases",
    "none",
    "zip_too_large",
    "zip_ratio",
    "no_exercise_cell",
    "sandbox_container",
    "sandbox_required",
    "not_graded",
    "group_not_run",
)
KIT_FORMAT = 1
DATA = re.compile(r'^LESSON = json\.loads\(r"""(.*?)"""\)$', re.S | re.M)


@dataclass
class Language:
    """One language of the lesson: its check.py, its texts of grading, its words for the lesson."""

    locale: str
    checker: str  # check.py's source (exercise edition)
    texts: dict[str, str]  # grade.* of content/locales/<locale>.yaml
    heading: str  # "Lesson 3: ..." in this language
    colon: str  # this language's colon, as the packs write it
    data: dict = field(init=False)  # check.py's LESSON data block
    comments: frozenset = field(init=False)  # the comment lines of its exercise kernel file
    _module: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.data = json.loads(DATA.search(self.checker).group(1))
        self.comments = frozenset(
            line.strip() for line in self.data["template"] if line.strip().startswith("#")
        )

    def text(self, key: str, **values) -> str:
        return self.texts[key].format(**values)

    def msg(self, key: str, **values) -> str:
        """A message of check.py in this language."""
        return self.data["messages"][key].format(**values)

    def module(self, folder: Path):
        """This language's check.py as a module (written under folder), to render results."""
        if self._module is None:
            digest = hashlib.sha256(self.checker.encode()).hexdigest()[:12]
            path = folder / f"{self.locale}-{digest}" / "check.py"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(self.checker, encoding="utf-8")
            name = f"coursepack_grade_{self.locale.replace('-', '_')}_{digest}"
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            self._module = sys.modules[name]
        return self._module


@dataclass
class GradeLesson:
    """What grading needs of one lesson."""

    spec: LessonSpec
    source_locale: str
    languages: dict[str, Language]
    mistake_codes: dict[str, str] = field(
        default_factory=dict
    )  # mistake id -> its fill, or old -> new
    answer: str | None = (
        None  # the kernel file filled with the answer (from the content; never in a kit)
    )
    texts: dict = field(
        default_factory=dict
    )  # the lesson's texts per language, reference answers too
    # (from the content, for rubric.json; never in a kit)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def checker(self) -> str:
        """The check.py submissions run against (the source language's exercise edition)."""
        return self.languages[self.source_locale].checker

    @property
    def checker_hash(self) -> str:
        return hashlib.sha256(self.checker.encode()).hexdigest()

    @property
    def mistakes(self) -> list[Mistake]:
        return list(self.spec.checks.mistakes)

    def expected_failures(self, mistake: Mistake) -> set[str]:
        return expected_failures(mistake, self.spec)

    def heading(self, locale: str) -> str:
        return self.languages[locale].heading

    def colon(self, locale: str) -> str:
        return self.languages[locale].colon

    def review_edits(
        self, code: str, notebook: bool, modules: Path
    ) -> tuple[list[int], str | None]:
        """Lines changed outside the blank, and the fill: against the exercise file of the language
        that differs least (a kernel file keeps its pack's comments, whose line count differs
        between languages; a student is not blamed for the language of the pack)."""
        found = []
        for loc in self.languages:
            module = self.languages[loc].module(modules)
            # the text the job's check.py runs: the code is written as UTF-8, and read as Python
            # reads it (a lone CR ends a line there; grading's own text still has it)
            text = module.python_text(code.encode("utf-8"))[0]
            found.append(module.review_edits(text, notebook))
        return min(found, key=lambda pair: (len(pair[0]), pair[1] is None))

    def detect_locale(self, code: str) -> str | None:
        """The language of the pack a kernel file came from, by its comments; None if unclear."""
        mine = {line.strip() for line in code.splitlines() if line.strip().startswith("#")}
        scores = {loc: len(mine & lang.comments) for loc, lang in self.languages.items()}
        best = max(scores.values(), default=0)
        winners = [loc for loc, score in scores.items() if score == best]
        return winners[0] if best > 0 and len(winners) == 1 else None


def load_lesson(content_dir: Path, lesson_id: str) -> GradeLesson:
    from generator.content.loader import load_content
    from generator.render.render import LessonContext, checker_source

    content = load_content(content_dir)
    lesson = content.lessons.get(lesson_id)
    if lesson is None:
        known = ", ".join(sorted(content.lessons)) or "none"
        raise GradeError(f"no published lesson '{lesson_id}' in {content_dir} (published: {known})")
    entry = next(e for e in content.course.lessons if e.id == lesson_id)
    languages = {}
    source = LessonContext(content, lesson, content.course.source_locale, "exercise")
    for locale in content.course.locales:
        texts = dict(content.locales[locale].grade)
        missing = [key for key in TEXT_KEYS if key not in texts]
        if missing:
            raise GradeError(
                f"{content_dir}/locales/{locale}.yaml: grade: missing {', '.join(missing)} "
                "(the texts of `coursepack grade`; see the source-language file)"
            )
        ui = content.locales[locale]
        languages[locale] = Language(
            locale,
            checker_source(LessonContext(content, lesson, locale, "exercise")),
            texts,
            ui.heading(lesson_id, entry.number),
            ui.pack.colon,
        )
    mistakes = {
        m.id: m.fill
        if m.fill is not None
        else f"{m.replace.old.strip()} -> {m.replace.new.strip()}"
        for m in lesson.spec.checks.mistakes
    }
    return GradeLesson(
        lesson.spec,
        content.course.source_locale,
        languages,
        mistakes,
        source.code(answer=True),
        dict(lesson.texts),
    )


def kit_json(lesson: GradeLesson) -> str:
    """The lesson as grading needs it, without the content: no answer, no declared mistake."""
    spec = lesson.spec.model_dump(mode="json")
    spec["checks"]["mistakes"] = []
    kit = {
        "format": KIT_FORMAT,
        "spec": spec,
        "source_locale": lesson.source_locale,
        "languages": {
            loc: {
                "checker": lang.checker,
                "texts": lang.texts,
                "heading": lang.heading,
                "colon": lang.colon,
            }
            for loc, lang in lesson.languages.items()
        },
    }
    return json.dumps(kit, ensure_ascii=False)


def load_kit(path: Path) -> GradeLesson:
    try:
        kit = json.loads(path.read_text(encoding="utf-8"))
        if kit.get("format") != KIT_FORMAT:
            raise ValueError(f"format {kit.get('format')!r}, expected {KIT_FORMAT}")
        languages = {
            loc: Language(loc, v["checker"], v["texts"], v["heading"], v["colon"])
            for loc, v in kit["languages"].items()
        }
        return GradeLesson(LessonSpec.model_validate(kit["spec"]), kit["source_locale"], languages)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise GradeError(f"{path}: not a grading kit that can be read ({exc})") from exc
