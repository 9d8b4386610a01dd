"""Load and validate all content at once: every problem is collected, with file:line:col."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from generator.content.codegen import CodeMarkerError, SolutionSource, parse_solution, without_markers
from generator.content.io_checks import check_io, value_problem
from generator.content.i18n import HASHES, TranslationState, draft_banner, merge, protected_problems, unit_keypath, units
from generator.content.markdown import unit_problems
from generator.errors import ProblemCollector
from generator.content.model import Course, LessonSpec, LessonText, Locale
from generator.files.yamlio import KeyPath, YamlDoc, dotted, load_yaml, read_text

# Reasons the generic checker gives for a failing case; every lesson text explains each one, plus
# the lesson's own reasons (checks.reasons in lesson.yaml, returned by its reference.classify).
GENERIC_REASONS = ("unwritten", "wrote_past_end", "wrong_value")
# Generic reasons a lesson text may explain in its own words; otherwise check.py shows the locale's
# text (checker.reason_<id> in content/locales/<locale>.yaml).
OPTIONAL_REASONS = ("read_past_end", "bf16_interpreter")
# What a case that fails for another cause than its values shows, as a declared mistake names it.
FAILURE_KINDS = ("error", "timeout", "crash", "fault", "wrong_shape", "wrong_dtype", "not_tensor")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Lesson:
    spec: LessonSpec
    solution: SolutionSource
    texts: dict[str, LessonText]
    folder: Path
    files: dict[str, bytes]   # extra files shipped as they are, by their name in the pack
    reference: str            # reference.py: the expected result in torch, embedded in check.py


@dataclass(frozen=True)
class CourseContent:
    root: Path
    course: Course
    locales: dict[str, Locale]
    lessons: dict[str, Lesson]
    translations: list[TranslationState]
    drafts: frozenset[str] = frozenset()   # locales built as drafts (course.yaml drafts, or build --draft)

    @property
    def published(self) -> list[Lesson]:
        return [self.lessons[e.id] for e in self.course.lessons if e.status == "published"]


def load_content(root: Path, draft: bool = False) -> CourseContent:
    """Read everything under root; raise ContentError listing every problem found. draft: every
    translation is a draft, as those course.yaml lists under drafts are."""
    root = root.resolve()
    problems = ProblemCollector(root.parent)
    course = _model(root / "course.yaml", Course, problems)
    if course is None:
        problems.raise_if_any()
    assert course is not None  # for the type checker: raise_if_any raised otherwise
    _check_course(course, root, problems)
    drafts = frozenset(c for c in course.locales if c != course.source_locale and (draft or c in course.drafts))
    states: list[TranslationState] = []
    locales = _load_locales(root, course, problems, states)
    _check_locales(course, locales, root, problems)
    lessons = {}
    for entry in course.lessons:
        if entry.status == "published":
            lesson = _load_lesson(root, entry.id, course, locales, problems, states, drafts)
            if lesson is not None:
                lessons[entry.id] = lesson
    problems.raise_if_any()
    return CourseContent(root, course, locales, lessons, states, drafts)


def _markers(*candidates: Locale | None) -> dict[str, str]:
    chosen = next((c for c in candidates if c is not None), None)
    if chosen is None:
        return {"missing": "not yet translated", "stale": "the translation may be out of date"}
    return {"missing": chosen.pack.i18n_missing, "stale": chosen.pack.i18n_stale}


def _load_locales(root: Path, course: Course, problems: ProblemCollector,
                  states: list[TranslationState]) -> dict[str, Locale]:
    source_path = _inside(root, Path("locales") / f"{course.source_locale}.yaml", problems)
    source_doc = _doc(source_path, problems)
    source = None if source_doc is None else _validate(source_doc, source_doc.data, Locale, problems)
    if source_doc is not None:
        source_doc.valid = source is not None
    if source is not None:
        _check_messages(source_doc, source, problems)
    locales = {course.source_locale: source} if source is not None else {}
    for code in course.locales:
        if code != course.source_locale:
            own = _doc(_inside(root, Path("locales") / f"{code}.yaml", problems), problems)
            own_markers = (own.data.get("pack") or {}) if own is not None else {}
            markers = _markers(source)
            if isinstance(own_markers, dict):   # the new language's own words for its markers, if it has them
                markers = {"missing": own_markers.get("i18n_missing") or markers["missing"],
                           "stale": own_markers.get("i18n_stale") or markers["stale"]}
            problems_before = len(problems.problems)
            locale = _translated(source_doc, own, Locale, code, markers, problems, states)
            if locale is not None and len(problems.problems) == problems_before:
                locales[code] = locale
    return locales


SKELETON_LOCALE = Path(__file__).resolve().parent.parent / "skeleton" / "content" / "locales" / "en.yaml"


def _check_messages(doc: YamlDoc, source: Locale, problems: ProblemCollector) -> None:
    """The source language has every message check.py may show (the skeleton's en.yaml has each):
    a course made by an older `coursepack init` lacks the newer ones, and check.py would fail on
    the first it shows."""
    skeleton = load_yaml(SKELETON_LOCALE, problems)
    needed = set((skeleton.data.get("checker") or {}) if skeleton is not None else {})
    missing = sorted(needed - set(source.checker))
    if missing:
        problems.add(doc.path, f"lacks messages check.py shows: {', '.join(missing)} (their English text is in the "
                     "en.yaml of a course made by `coursepack init`)", "checker", *doc.position(("checker",)))


def _draft_note(ui: Locale | None, code: str, states: list[TranslationState]) -> tuple[str, int] | None:
    """A draft lesson's note: the locale's own words, and how many of its UI units fall back."""
    if ui is None:
        return None
    shown = sum(len(s.missing) for s in states if s.locale == code and s.path.parent.name == "locales")
    return ui.pack.i18n_draft, shown


def _inside(root: Path, relative: Path, problems: ProblemCollector) -> Path:
    """root/relative, refusing paths that leave the content folder (through .. or a link)."""
    path = root / relative
    try:
        path.resolve().relative_to(root)
    except ValueError:
        problems.add(path, f"leaves the content folder {root.name}/ (through '..' or a symbolic link)")
        return root / "__outside__" / relative.name
    return path


def _doc(path: Path, problems: ProblemCollector) -> YamlDoc | None:
    if "__outside__" in path.parts:
        return None
    doc = load_yaml(path, problems)
    if doc is None:
        return None
    if not isinstance(doc.data, dict):
        problems.add(path, "expected a mapping of keys at the top level", line=1, column=1)
        return None
    return doc


def _model(path: Path, model: type[M], problems: ProblemCollector) -> M | None:
    doc = _doc(path, problems)
    return None if doc is None else _validate(doc, doc.data, model, problems)


def _validate(doc: YamlDoc, data: Any, model: type[M], problems: ProblemCollector, own_only: bool = False) -> M | None:
    """own_only: report only problems in the file's own keys (when a broken source filled the rest,
    its problems are reported once, in the source file)."""
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            if own_only and _data_path(data, error["loc"]) not in doc.value_pos:
                continue
            _report(doc, error, problems, data)
        return None
    if model is LessonText or model is Locale:
        _check_prose(doc, doc.data, (), problems)
    return validated


def _translated(source: YamlDoc | None, doc: YamlDoc | None, model: type[M], locale: str, markers: dict[str, str],
                problems: ProblemCollector, states: list[TranslationState], draft: Any = None) -> M | None:
    """A translation merged over its source: missing units fall back, visibly marked; stale
    units are marked; protected tokens must match the source's."""
    if doc is None or source is None:
        return None
    path = doc.path
    stamps = doc.data.get(HASHES) or {}
    if not isinstance(stamps, dict):
        line, column = doc.position((HASHES,))
        problems.add(path, "expected a mapping of unit ids to hashes", HASHES, line, column)
        stamps = {}
    state = TranslationState(path, locale, source.path, stamps=stamps)
    merged = merge(source.data, doc.data, stamps, markers, state)
    source_units, own_units = units(source.data), units(doc.data)
    state.positions = {unit: doc.position(unit_keypath(unit)) for unit in state.missing + state.stale}
    for unit in state.extra:
        problems.add(path, "extra item: the source has fewer", unit, *doc.position(unit_keypath(unit)))
    for unit, text in own_units.items():
        if unit in source_units and text.strip():
            for message in protected_problems(unit, source_units[unit], text):
                problems.add(path, message, unit, *doc.position(unit_keypath(unit)))
    for unit in stamps if source.valid else ():
        if unit not in source_units:
            line, column = doc.position((HASHES, unit), of_key=True)
            problems.add(path, "stamp for a unit the source does not have", f"{HASHES}.{unit}", line, column)
    states.append(state)
    if draft is not None:   # (the words, the course UI file's count of units in the source language)
        draft_banner(merged, draft[0].replace("{count}", str(draft[1] + len(state.missing))))
    return _validate(doc, merged, model, problems, own_only=not source.valid)


def _check_prose(doc: YamlDoc, node: Any, keypath: KeyPath, problems: ProblemCollector) -> None:
    """Every Markdown value on its own: closed fences, balanced math, no raw HTML."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key != "mermaid":
                _check_prose(doc, value, keypath + (key,), problems)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _check_prose(doc, value, keypath + (index,), problems)
    elif isinstance(node, str):
        line, column = doc.position(keypath)
        block = 1 if "\n" in node else 0   # a block scalar's text starts on the line after its key
        for offset, message in unit_problems(node):
            inside = block or offset   # past the value's first line: report the line's start
            problems.add(doc.path, message, dotted(keypath), line + block + offset, 1 if inside else column)


def _report(doc: YamlDoc, error: Any, problems: ProblemCollector, data: Any = None) -> None:
    keypath = _data_path(doc.data if data is None else data, error["loc"])
    kind = error["type"]
    if kind == "missing":
        line, column = doc.position(keypath[:-1])
        problems.add(doc.path, "missing", dotted(keypath + (error["loc"][-1],)), line, column)
        return
    if kind == "extra_forbidden":
        line, column = doc.position(keypath, of_key=True)
        problems.add(doc.path, "unknown key (check its spelling; see the source-language file)",
                     dotted(keypath), line, column)
        return
    line, column = doc.position(keypath)
    problems.add(doc.path, _explain(error), dotted(keypath), line, column)


def _data_path(data: Any, loc: tuple[Any, ...]) -> KeyPath:
    """The parts of a pydantic location that name real keys (unions add type names to it)."""
    path: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
    return tuple(path)


def _explain(error: Any) -> str:
    kind, value = error["type"], error.get("input")
    shown = f" (got {_short(value)})" if value is not None else " (got nothing)"
    simple = {
        "string_type": "expected text",
        "int_parsing": "expected a whole number",
        "int_type": "expected a whole number",
        "bool_parsing": "expected true or false",
        "list_type": "expected a list",
        "dict_type": "expected a mapping of keys",
        "model_type": "expected a mapping of keys",
        "string_too_short": "expected non-empty text",
        "literal_error": error["msg"].replace("Input should be", "expected"),
    }
    if kind in simple:
        return simple[kind] + shown
    return error["msg"].replace("Input should", "expected to").replace("String should", "expected text to") + shown


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 40 else text[:37] + "..."


def _check_course(course: Course, root: Path, problems: ProblemCollector) -> None:
    path = root / "course.yaml"
    if course.source_locale not in course.locales:
        problems.add(path, f"source_locale {course.source_locale} is not in locales", "source_locale")
    for code in course.drafts:
        if code not in course.locales or code == course.source_locale:
            problems.add(path, f"draft {code} is not one of the translations in locales", "drafts")
    for key, values in (("locales", course.locales), ("lessons", [e.id for e in course.lessons])):
        seen = set()
        for value in values:
            if value in seen:
                problems.add(path, f"'{value}' is listed twice", key)
            seen.add(value)


def _check_locales(course: Course, locales: dict[str, Locale], root: Path, problems: ProblemCollector) -> None:
    source = locales.get(course.source_locale)
    ids = {e.id for e in course.lessons}
    for code, locale in locales.items():
        path = root / "locales" / f"{code}.yaml"
        _same_keys(path, "lesson_titles", set(locale.lesson_titles), ids, "the course's lessons", problems)
        if source is not None and code != course.source_locale:
            for section in ("checker", "grade"):
                _same_keys(path, section, set(getattr(locale, section)), set(getattr(source, section)),
                           f"the {course.source_locale} source", problems)
            _same_keys(path, "pack.file_descriptions", set(locale.pack.file_descriptions),
                       set(source.pack.file_descriptions), f"the {course.source_locale} source", problems)


def _same_keys(path: Path, where: str, have: set[str], want: set[str], what: str, problems: ProblemCollector) -> None:
    """Keys that must match another file's: each problem located (an unknown key at its own line,
    a missing one at its parent mapping's)."""
    parent = tuple(where.split("."))
    for key in sorted(want - have):
        problems.add(path, f"missing (required by {what})", f"{where}.{key}", *_key_position(path, parent))
    for key in sorted(have - want):
        problems.add(path, f"unknown key (not in {what})", f"{where}.{key}", *_key_position(path, parent + (key,)))


def _key_position(path: Path, keypath: tuple[str, ...]) -> tuple[int, int]:
    """Line and column of a key in a file already read once (read again for its positions: only
    when there is a problem to locate)."""
    doc = load_yaml(path, ProblemCollector(path.parent))
    return doc.position(keypath, of_key=True) if doc is not None else (0, 0)


def _load_lesson(root: Path, lesson_id: str, course: Course, locales: dict[str, Locale],
                 problems: ProblemCollector, states: list[TranslationState], drafts: frozenset[str]) -> Lesson | None:
    folder = _inside(root, Path("lessons") / lesson_id, problems)
    if "__outside__" in folder.parts:
        return None
    if not folder.is_dir():
        problems.add(root / "course.yaml", f"published lesson has no folder lessons/{lesson_id}/", "lessons")
        return None
    spec_doc = _doc(_inside(root, Path("lessons") / lesson_id / "lesson.yaml", problems), problems)
    spec = None if spec_doc is None else _validate(spec_doc, spec_doc.data, LessonSpec, problems)
    solution = reference = None
    if spec is not None:
        if spec.id != lesson_id:
            problems.add(spec_doc.path, f"id '{spec.id}' does not match its folder '{lesson_id}'", "id",
                         *spec_doc.position(("id",)))
        solution = _load_solution(root, folder, spec, problems)
        reference = _load_reference(root, folder, spec, spec_doc, problems)
        defined = frozenset() if reference is None else _top_level_functions(reference)
        _check_checks(spec, spec_doc, solution, defined, problems)
        _check_rubric(spec, spec_doc, problems)
    texts = {}
    source_path = _inside(root, Path("lessons") / lesson_id / f"text.{course.source_locale}.yaml", problems)
    source_doc = _doc(source_path, problems)
    for code in sorted(course.locales, key=lambda c: c != course.source_locale):   # the source first
        path = _inside(root, Path("lessons") / lesson_id / f"text.{code}.yaml", problems)
        if code == course.source_locale:
            text = None if source_doc is None else _validate(source_doc, source_doc.data, LessonText, problems)
            if source_doc is not None:
                source_doc.valid = text is not None
        else:
            markers = _markers(locales.get(code), locales.get(course.source_locale))
            text = _translated(source_doc, _doc(path, problems), LessonText, code, markers, problems, states,
                               _draft_note(locales.get(code), code, states) if code in drafts else None)
        if text is not None and spec is not None:
            _check_text(text, spec, solution, folder / f"text.{code}.yaml", problems)
        texts[code] = text
    files = _load_files(root, folder, spec, problems) if spec is not None else {}
    if spec is None or solution is None or reference is None or None in texts.values() or len(files) != len(spec.files):
        return None
    return Lesson(spec, solution, texts, folder, files, reference)


def _load_files(root: Path, folder: Path, spec: LessonSpec, problems: ProblemCollector) -> dict[str, bytes]:
    files = {}
    reserved = {spec.kernel_file, "README.md", "lesson.md", "lesson.ipynb", "check.py", "requirements.txt",
                "manifest.json", "verification.json"}
    for index, extra in enumerate(spec.files):
        if extra.name in reserved or extra.name in files:
            problems.add(folder / "lesson.yaml", f"'{extra.name}' is already a file of the pack", f"files.{index}.name")
            continue
        path = _inside(root, folder.relative_to(root) / extra.source, problems)
        text = None if "__outside__" in path.parts else read_text(path, problems)
        if text is not None:
            files[extra.name] = text.encode()
    if spec.bench is not None and spec.bench not in {f.name for f in spec.files}:
        problems.add(folder / "lesson.yaml", f"bench '{spec.bench}' is not one of the lesson's files", "bench")
    return files


def _load_solution(root: Path, folder: Path, spec: LessonSpec, problems: ProblemCollector) -> SolutionSource | None:
    path = _inside(root, folder.relative_to(root) / spec.solution, problems)
    if "__outside__" in path.parts:
        return None
    text = read_text(path, problems)
    if text is None:
        return None
    try:
        return parse_solution(text)
    except CodeMarkerError as exc:
        problems.add(path, str(exc), line=exc.line, column=exc.column)
        return None


def _load_reference(root: Path, folder: Path, spec: LessonSpec, doc: YamlDoc, problems: ProblemCollector) -> str | None:
    path = _inside(root, folder.relative_to(root) / spec.checks.reference, problems)
    text = None if "__outside__" in path.parts else read_text(path, problems)
    if text is None:
        return None
    defined = _top_level_functions(text)
    if isinstance(defined, SyntaxError):
        problems.add(path, f"not valid Python: {defined.msg}", line=defined.lineno or 0, column=defined.offset or 0)
        return None
    if "reference" not in defined:
        problems.add(path, "expected a function reference(...) that returns the expected output", line=1, column=1)
        return None
    return text


@lru_cache(maxsize=64)
def _top_level_functions(text: str) -> frozenset[str] | SyntaxError:
    """The functions a Python text defines at its top level (or why it does not parse), per text."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return exc
    return frozenset(node.name for node in tree.body if isinstance(node, ast.FunctionDef))


def _check_checks(spec: LessonSpec, doc: YamlDoc, solution: SolutionSource | None, defined: frozenset[str],
                  problems: ProblemCollector) -> None:
    """What the schema cannot see: names that must match, shapes the values must fit, edits that
    must apply."""
    checks = spec.checks

    def add(message: str, *keypath: Any) -> None:
        problems.add(doc.path, message, dotted(("checks",) + keypath), *doc.position(("checks",) + keypath))

    inputs = {item.name: item for item in checks.inputs}
    for index, item in enumerate(checks.inputs):
        if (item.shape is None) == (item.scalar is None):
            add("an input needs exactly one of 'shape' (a tensor) or 'scalar' (a float and its default)", "inputs", index)
    if len(inputs) != len(checks.inputs):
        add("input names must be unique", "inputs")
    if checks.poison != checks.poison or checks.poison in (float("inf"), float("-inf")):
        add("the poison value must be a finite number", "poison")
    ids = [case.id for case in checks.cases]
    if len(set(ids)) != len(ids):
        add("case ids must be unique", "cases")
    for index, case in enumerate(checks.cases):
        _check_case(case, index, inputs, add)
    check_io(checks, defined, add)
    for index, mistake in enumerate(checks.mistakes):
        if (mistake.fill is None) == (mistake.replace is None):
            add("a mistake needs exactly one of 'fill' (replaces the blank) or 'replace' (an edit of the answer code)",
                "mistakes", index)
        found = 1 if mistake.replace is None or solution is None else without_markers(solution.text).count(mistake.replace.old)
        if found != 1:
            add(f"'replace.old' must occur exactly once in the code of {spec.solution}, outside comments "
                f"(found {found} times)", "mistakes", index, "replace", "old")
        named = mistake.fails if isinstance(mistake.fails, list) else mistake.fails.all_except
        for case_id in named:
            if case_id not in ids:
                add(f"unknown case '{case_id}'", "mistakes", index, "fails")
        _check_declared_reasons(mistake, index, checks, ids, add)
    exercised = {m.reason for m in checks.mistakes} | {r for m in checks.mistakes for r in m.reasons.values()}
    for index, reason in enumerate(checks.reasons):
        if reason not in exercised:
            add(f"no declared mistake shows the reason '{reason}': declare one whose `reason` (or `reasons`) "
                "names it, so that verification proves the checker gives it", "reasons", index)


def _check_declared_reasons(mistake: Any, index: int, checks: Any, ids: list[str], add: Any) -> None:
    known = set(GENERIC_REASONS) | set(OPTIONAL_REASONS) | set(FAILURE_KINDS) | set(checks.reasons)
    failing = set(mistake.fails) if isinstance(mistake.fails, list) else set(ids) - set(mistake.fails.all_except)
    if mistake.reason is not None and mistake.reason not in known:
        add(f"unknown reason '{mistake.reason}' (expected one of: {', '.join(sorted(known))})",
            "mistakes", index, "reason")
    for case_id, reason in mistake.reasons.items():
        if case_id not in failing:
            add(f"'{case_id}' is not a case this mistake fails", "mistakes", index, "reasons", case_id)
        if reason not in known:
            add(f"unknown reason '{reason}' (expected one of: {', '.join(sorted(known))})",
                "mistakes", index, "reasons", case_id)


def _check_case(case: Any, index: int, inputs: dict, add: Any) -> None:
    for name, value in case.values.items():
        dtype = inputs[name].dtype if name in inputs else None
        for item in value if isinstance(value, list) else [value]:
            problem = value_problem(item, dtype)
            if problem:
                add(problem, "cases", index, "values", name)
    for key in ("values", "layout", "draw"):
        for name in getattr(case, key):
            if name not in inputs:
                add(f"'{name}' is not one of the inputs ({', '.join(inputs)})", "cases", index, key, name)
    for name, item in inputs.items():
        value = case.values.get(name)
        if item.scalar is not None:
            if isinstance(value, list):
                add("a scalar input takes one value, not a list", "cases", index, "values", name)
            continue
        if isinstance(value, str):
            add("a tensor input takes a list of values", "cases", index, "values", name)
        if not case.dims:
            if value is None or len(item.shape or []) != 1:
                add(f"without 'dims' every tensor input needs its values as a 1-D list ('{name}' has none)",
                    "cases", index)
            continue
        for dim in item.shape or []:
            if isinstance(dim, str) and dim not in case.dims:
                add(f"dims lacks '{dim}' (the shape of input '{name}')", "cases", index, "dims")
        if case.layout.get(name) == "transposed" and len(item.shape or []) != 2:
            add(f"layout 'transposed' needs a 2-D input; '{name}' has shape {item.shape}", "cases", index, "layout", name)


def _check_text(text: LessonText, spec: LessonSpec, solution: SolutionSource | None, path: Path,
                problems: ProblemCollector) -> None:
    _same_keys(path, "figures", set(text.figures), set(spec.figures), "lesson.yaml", problems)
    _same_keys(path, "questions", set(text.questions), set(spec.questions), "lesson.yaml", problems)
    _same_keys(path, "rubric.parts", set(text.rubric.parts),
               {p.id for p in spec.rubric.manual if p.where() != "question"},
               "lesson.yaml's rubric: its manual parts that are not questions", problems)
    _same_keys(path, "rubric.vetoes", set(text.rubric.vetoes), set(spec.rubric.vetoes), "lesson.yaml's rubric.vetoes",
               problems)
    _same_keys(path, "checker.cases", set(text.checker.cases), {c.id for c in spec.checks.cases},
               "lesson.yaml's cases", problems)
    _same_keys(path, "checker.reasons", set(text.checker.reasons) - set(OPTIONAL_REASONS),
               set(GENERIC_REASONS) | set(spec.checks.reasons),
               "the checker's reasons and lesson.yaml's checks.reasons", problems)
    if solution is not None:
        _same_keys(path, "code_comments", set(text.code_comments), set(solution.text_keys),
                   f"the @text markers in {spec.solution}", problems)


def _check_rubric(spec: LessonSpec, doc: YamlDoc, problems: ProblemCollector) -> None:
    """The rubric's parts: automatic ones are the case groups, manual ones each have one answer
    place (every question, at most one implementation and one failures part), the pass mark is
    reachable, ids are unique."""
    rubric = spec.rubric

    def add(message: str, *keypath: Any) -> None:
        problems.add(doc.path, message, dotted(("rubric",) + keypath), *doc.position(("rubric",) + keypath))

    groups = {case.group for case in spec.checks.cases}
    ids = [part.id for part in rubric.parts]
    for index, part in enumerate(rubric.parts):
        if ids.index(part.id) != index:
            add(f"part '{part.id}' is declared twice", "parts", index, "id")
        if part.kind == "auto" and (part.id not in ("normal", "boundary") or part.place is not None):
            add("an automatic part is a case group: id 'normal' or 'boundary', and no place", "parts", index)
        if part.where() == "question" and part.id not in spec.questions:
            add(f"'{part.id}' is not one of the questions ({', '.join(spec.questions)}); "
                "a manual part that is not a question needs place: implementation or failures", "parts", index, "id")
        if part.where() in ("implementation", "failures") and part.id in spec.questions:
            add(f"'{part.id}' is a question: leave its place out", "parts", index, "place")
    for place in ("implementation", "failures"):
        if sum(1 for part in rubric.manual if part.where() == place) > 1:
            add(f"at most one part has place: {place}", "parts")
    for group in sorted(groups - {p.id for p in rubric.parts if p.kind == "auto"}):
        add(f"the case group '{group}' has no automatic part (expected {{id: {group}, kind: auto, points: N}})",
            "parts")
    for question in spec.questions:
        if question not in ids:
            add(f"question '{question}' has no manual part (expected {{id: {question}, kind: manual, points: N}})",
                "parts")
    if rubric.pass_total > rubric.max_total:
        add(f"pass_total {rubric.pass_total} is more than the rubric's {rubric.max_total} points", "pass_total")
    if len(set(rubric.vetoes)) != len(rubric.vetoes):
        add("veto ids must be unique", "vetoes")
