"""Typed content models. Unknown keys are errors (a typo must not be silently ignored)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Ident = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
LocaleCode = Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")]
Text = Annotated[str, StringConstraints(min_length=1)]
FileName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", max_length=64)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


# ---- content/course.yaml -------------------------------------------------------------------

class LessonEntry(Strict):
    id: Ident
    number: int = Field(ge=1, le=999)
    status: Literal["published", "planned"]


class Course(Strict):
    id: Ident
    source_locale: LocaleCode
    locales: list[LocaleCode] = Field(min_length=1)
    lessons: list[LessonEntry] = Field(min_length=1)
    drafts: list[LocaleCode] = []   # translations in progress: missing units fall back, even answers


# ---- content/locales/<locale>.yaml -----------------------------------------------------------

class Headings(Strict):
    goal: Text
    pass_criteria: Text
    prerequisites: Text
    model: Text
    model_what: Text
    model_how: Text
    model_correctness: Text
    model_performance: Text
    demo: Text
    exercise: Text
    check_method: Text
    submit: Text
    questions: Text
    your_answer: Text
    reference_answer: Text
    rubric: Text
    hints: Text
    solution: Text
    verification: Text
    references: Text
    navigation: Text
    measured: Text
    veto: Text


class PageLabels(Strict):
    """Words of lesson.html that are not lesson text: chart axes and legends, link names."""
    chart_bandwidth: Text
    chart_tflops: Text
    chart_block: Text
    chart_copy: Text
    chart_kernel: Text
    chart_subtitle: Text
    permalink: Text


class PackTexts(Strict):
    edition_exercise: Text
    edition_answer: Text
    readme_intro: Text
    readme_machine_title: Text   # which route fits which machine (Linux, Windows, macOS), before the install
    readme_machine: Text
    readme_work_title: Text
    readme_setup: Text
    readme_check: Text
    readme_no_gpu: Text
    readme_submit: Text
    readme_files: Text
    file_descriptions: dict[str, Text]
    not_verified: Text
    verified_on: Text
    previous: Text
    next: Text
    planned_lesson: Text
    other_pack: Text
    hint_level: Text
    hints_intro: Text
    index_intro: Text
    index_lessons: Text
    index_start: Text
    index_planned: Text
    colon: Text
    hint_level_names: list[Text] = Field(min_length=4, max_length=4)
    hint_answer_only: Text
    notebook_setup: Text
    notebook_check: Text
    notebook_gpu: Text
    notebook_interpreter: Text
    i18n_missing: Text
    i18n_stale: Text
    i18n_draft: Text   # "draft translation: {count} units in the source language"
    measured_intro: Text
    measured_checks: Text
    measured_placeholder: Text
    page: PageLabels


class Locale(Strict):
    language: Text
    course_title: Text
    lesson_heading: Text
    lesson_titles: dict[Ident, Text]
    headings: Headings
    pack: PackTexts
    checker: dict[Ident, Text]
    grade: dict[Ident, Text]      # `coursepack grade`: feedback pages, the gradebook, the class summary

    def heading(self, lesson_id: str, number: int) -> str:
        """'Lesson 3: <title>' in this language."""
        return self.lesson_heading.format(number=number, title=self.lesson_titles[lesson_id])


# ---- content/lessons/<id>/lesson.yaml (locale-neutral) ----------------------------------------

Dtype = Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]   # floating
IntDtype = Literal["int8", "int16", "int32", "int64", "uint8", "bool"]
AnyDtype = Dtype | IntDtype
Layout = Literal["contiguous", "transposed", "sliced"]
DimName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=32)]
Number = Annotated[str, StringConstraints(pattern=r"^[+-]?(nan|inf|(\d+\.?\d*|\.\d+)(e[+-]?\d+)?)$")]


class Draw(Strict):
    """Uniform in [low, high): floats, or integers for an integer input, where a bound may name a
    dimension (`high: V` draws indices in [0, V))."""
    low: float | DimName = -8.0
    high: float | DimName = 8.0
    alternate_signs: bool = False


Shape = list[DimName | Annotated[int, Field(ge=0)]]


class Input(Strict):
    """One argument of the entry function: a tensor of a declared shape, or a Python number."""
    name: Ident
    shape: Shape | None = Field(default=None, min_length=1, max_length=4)
    dtype: AnyDtype | None = None   # absent: the case's dtype (a tensor), a float (a scalar)
    draw: Draw | None = None
    scalar: Number | None = None


class Case(Strict):
    id: Ident
    group: Literal["normal", "boundary"]
    dtype: Dtype = "float32"
    dims: dict[DimName, Annotated[int, Field(ge=0, le=1 << 30)]] = {}
    values: dict[Ident, list[Text] | Text] = {}   # numbers as text: checked in the loader, with its own message
    layout: dict[Ident, Layout] = {}
    draw: dict[Ident, Draw] = {}   # per input, in place of the input's own draw in this case
    calls: list[dict[Ident, Text]] = Field(default=[], max_length=8)   # more calls, scalars overridden
    gpu_only: bool = False


class FailsExcept(Strict):
    all_except: list[Ident]


class Replace(Strict):
    old: Text
    new: str


class Mistake(Strict):
    """Wrong code that verification proves the checker catches: a fill of the blank, or an edit
    of the answer code; with the reason the student must be shown for each case it fails."""
    id: Ident
    fill: Text | None = None
    replace: Replace | None = None
    fails: list[Ident] | FailsExcept
    reason: Ident | None = None              # shown for every case it fails
    reasons: dict[Ident, Ident] = {}         # per case, where it differs from `reason`

    def reason_for(self, case_id: str) -> str | None:
        return self.reasons.get(case_id, self.reason)


class Tolerance(Strict):
    rtol: float = Field(default=0.0, ge=0)
    atol: float = Field(default=0.0, ge=0)


class Output(Strict):
    """One result of the entry: returned (in this order), or an in-place input after the call."""
    name: Ident
    shape: Shape | None = Field(default=None, max_length=4)
    dtype: AnyDtype | None = None   # absent: the reference's
    poison: float | None = None     # absent: checks.poison
    compare: dict[Dtype, Tolerance] | None = None   # absent: checks.compare
    check: Literal["values", "property"] = "values"   # property: only reference.check judges its values


class Checks(Strict):
    timeout_s: int = Field(default=120, ge=1)
    reference: FileName
    poison: float
    inputs: list[Input] = Field(min_length=1)
    outputs: list[Output] = Field(default=[], max_length=16)   # absent: one returned output, `out`
    inplace: list[Ident] = []      # inputs the entry writes into (each also named in outputs)
    compare: dict[Dtype, Tolerance] = {}
    reasons: list[Ident] = []
    cases: list[Case] = Field(min_length=1)
    mistakes: list[Mistake] = []


class RubricPart(Strict):
    """One part of the rubric. auto: the points of a case group (its id is the group's), scored by
    the checker; manual: graded by the instructor from what the student wrote in the part's own
    answer place: under the question of the same id (place question, the default), under the
    exercise (implementation) or after the check (failures)."""
    id: Ident
    kind: Literal["auto", "manual"]
    points: int = Field(ge=0, le=1000)
    place: Literal["question", "implementation", "failures"] | None = None

    def where(self) -> str | None:
        """The answer place of a manual part (None for an automatic one)."""
        return None if self.kind == "auto" else (self.place or "question")


class Rubric(Strict):
    parts: list[RubricPart] = Field(min_length=1)
    pass_total: int = Field(ge=0)
    vetoes: list[Ident] = []      # what fails a submission whatever its points (texts: rubric.vetoes)

    @model_validator(mode="before")
    @classmethod
    def _not_the_old_shape(cls, data: object) -> object:
        """The rubric before parts had ids ({normal, boundary, explanation, per_question}): say how to
        write it now, instead of five unknown keys."""
        if isinstance(data, dict) and "per_question" in data and "parts" not in data:
            raise ValueError("the rubric is a list of parts with ids now: parts: [{id: normal, kind: auto, points: 2}, "
                             "{id: boundary, kind: auto, points: 1}, {id: explanation, kind: manual, points: 1, "
                             "place: implementation}, {id: q1, kind: manual, points: 2}, ...], pass_total: N, "
                             "vetoes: [ids] (docs/lesson-format.md)")
        return data

    def points(self, part_id: str) -> int:
        return next((p.points for p in self.parts if p.id == part_id), 0)

    @property
    def max_total(self) -> int:
        return sum(p.points for p in self.parts)

    @property
    def manual(self) -> list[RubricPart]:
        return [p for p in self.parts if p.kind == "manual"]

    @property
    def normal(self) -> int:       # the automatic points of the case groups, as the checker scores them
        return self.points("normal")

    @property
    def boundary(self) -> int:
        return self.points("boundary")

    @property
    def explanation(self) -> int:
        """The manual points outside the questions (the explanations)."""
        return sum(p.points for p in self.manual if p.where() != "question")

    @property
    def question_points(self) -> int:
        return sum(p.points for p in self.manual if p.where() == "question")


class ExtraFile(Strict):
    name: FileName
    source: FileName
    edition: Literal["both", "answer"]


class LessonSpec(Strict):
    id: Ident
    kernel_file: FileName
    solution: FileName
    entry: Ident
    kernel: Ident
    figures: list[Ident] = []
    questions: list[Ident] = Field(min_length=1)
    files: list[ExtraFile] = []
    bench: FileName | None = None
    checks: Checks
    rubric: Rubric


# ---- content/lessons/<id>/text.<locale>.yaml --------------------------------------------------

class Figure(Strict):
    mermaid: Text
    caption: Text


class Question(Strict):
    prompt: Text
    answer: Text


class ModelSection(Strict):
    what: Text
    how_intro: Text
    how_steps: Text
    correctness: Text
    performance: Text


class ExerciseText(Strict):
    task: Text
    rules: Text
    todo_comment: Text


class PartText(Strict):
    """A manual part that is not a question: its heading, what the student is asked, and the
    reference answer (answer edition only)."""
    title: Text
    prompt: Text
    reference: Text | None = None


class RubricText(Strict):
    code: Text
    questions: Text
    pass_rule: Text
    parts: dict[Ident, PartText] = {}   # every manual part of lesson.yaml's rubric that is not a question
    vetoes: dict[Ident, Text]           # every veto of lesson.yaml's rubric, by its id


class Reference(Strict):
    title: Text
    url: Text


class CheckerText(Strict):
    title: Text
    cases: dict[Ident, Text]
    reasons: dict[Ident, Text]


class MeasuredText(Strict):
    tables: dict[Ident, Text] = {}
    axes: dict[Ident, Text] = {}    # x-axis title of a table's chart, when its param is not BLOCK
    intro: Text | None = None       # replaces the locale's measured_intro ({device}, {torch}, {triton})


class LessonText(Strict):
    edition_note_exercise: Text
    edition_note_answer: Text
    goal: Text
    pass_criteria: list[Text] = Field(min_length=1)
    prerequisites: Text
    role: Text
    model: ModelSection
    figures: dict[Ident, Figure]
    demo: Text
    recap: Text
    exercise: ExerciseText
    code_comments: dict[Ident, Text]
    check_method: Text
    submit: Text
    questions: dict[Ident, Question]
    rubric: RubricText
    hints: list[Text] = Field(min_length=4, max_length=4)
    solution_note: Text
    references: list[Reference]
    references_note: Text
    checker: CheckerText
    files: dict[FileName, Text] = {}   # what the lesson's own files are, for the pack README
    measured: MeasuredText = MeasuredText()
