"""Render one lesson model into packs: the same path for both editions, switched by `answer`."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from generator.checker.shared.common import without_main_block as checker_lines_before_main
from generator.files.archive import constant_part
from generator.checker.join import DATA_LINE, joined, with_data
from generator.content.codegen import blank_index, render_code
from generator.errors import ContentError, CoursepackError, Location, Problem
from generator.render.html import pack_page
from generator.content.loader import OPTIONAL_REASONS, CourseContent, Lesson
from generator.content.markdown import Cell, check_markdown, parse_blocks, split_cells
from generator.files.memo import per_build
from generator.content.model import LessonText, Locale, Mistake
from generator.render.notebook import build_notebook
from generator.files.pack import Edition, Pack, manifest

MIN_TORCH, MIN_TRITON = "2.11", "3.6"


class RenderError(CoursepackError):
    pass


@per_build
def jinja_env(templates: Path) -> jinja2.Environment:
    """The one template environment: strict, explicit loader, predictable whitespace. One per
    build (its memo): compiled templates are reused, and Jinja reloads a template whose file changed."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=jinja2.select_autoescape(["html", "htm", "xml"]),
        # YAML block scalars end in a newline; the templates decide the spacing themselves.
        finalize=lambda value: value.strip("\n") if isinstance(value, str) else value,
    )
    env.filters["pyrepr"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


@dataclass(frozen=True)
class LessonContext:
    """What every file of one lesson x locale x edition is rendered from."""

    content: CourseContent
    lesson: Lesson
    locale: str
    edition: Edition
    bundle: bool = False  # a course bundle's folder: navigation links to the other lessons' folders

    @property
    def answer(self) -> bool:
        return self.edition == "answer"

    @property
    def ui(self) -> Locale:
        return self.content.locales[self.locale]

    @property
    def text(self) -> LessonText:
        return self.lesson.texts[self.locale]

    @property
    def number(self) -> int:
        return next(e.number for e in self.content.course.lessons if e.id == self.lesson.spec.id)

    @property
    def heading(self) -> str:
        return self.ui.heading(self.lesson.spec.id, self.number)

    @property
    def edition_name(self) -> str:
        return self.ui.pack.edition_answer if self.answer else self.ui.pack.edition_exercise

    def code(self, fill: str | None = None, answer: bool | None = None) -> str:
        return render_code(
            self.lesson.solution,
            self.text.code_comments,
            self.text.exercise.todo_comment,
            self.answer if answer is None else answer,
            fill,
        )

    @property
    def hints(self) -> list[str]:
        return list(self.text.hints if self.answer else self.text.hints[:3])


def check_templates(env: jinja2.Environment) -> None:
    """Compile every template the folder holds (the grading page's and Quarto's too, which a
    build does not render), so a broken one fails `check` and `build`, not a later `grade`.
    Raises ContentError with each syntax error as file:line."""
    templates = Path(env.loader.searchpath[0])
    problems = []
    for name in sorted(env.loader.list_templates()):
        if not name.endswith(".j2"):
            continue  # static files beside the templates (lesson.css) are copied, not compiled
        try:
            env.get_template(name)
        except jinja2.TemplateSyntaxError as exc:
            where = _template_name(exc.filename or name, templates)
            problems.append(
                Problem(Location(where, exc.lineno or 0), f"template syntax: {exc.message or exc}")
            )
    if problems:
        raise ContentError(problems)


def _template_name(name: str, templates: Path) -> str:
    try:
        return str(Path(name).resolve().relative_to(templates.resolve().parent))
    except ValueError:
        return name


def located_template_error(exc: jinja2.TemplateError, templates: Path) -> RenderError:
    """A template mistake as file:line: what, instead of a traceback."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        name, line = exc.filename or exc.name or "?", exc.lineno
    else:
        import traceback

        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(".j2")]
        name, line = (frames[-1].filename, frames[-1].lineno) if frames else ("template", 0)
    name = _template_name(name, templates)
    kind = "template syntax" if isinstance(exc, jinja2.TemplateSyntaxError) else "template"
    return RenderError(f"{name}:{line}: {kind}: {exc.message or exc}")


def render_pack(ctx: LessonContext, env: jinja2.Environment, page: bool = True) -> Pack:
    """Every file of a lesson's own pack except those written after verification (README,
    manifest). page: with an early lesson.html, for the leak scan and the formula errors before
    verification (a pack that finalize_pack finishes at once gets its page there). The same
    rendering is the lesson's folder in a course bundle: finalize_pack with a bundle context swaps
    its navigation, the one section that differs."""
    if ctx.bundle:
        raise ValueError(
            "render_pack renders a lesson's own pack; finalize_pack makes its bundle folder"
        )
    try:
        return _render_pack(ctx, env, page)
    except jinja2.TemplateError as exc:
        raise located_template_error(exc, Path(env.loader.searchpath[0])) from exc


def _render_pack(ctx: LessonContext, env: jinja2.Environment, page: bool) -> Pack:
    spec = ctx.lesson.spec
    pack = Pack(spec.id, ctx.locale, ctx.edition)
    code = ctx.code()
    document = env.get_template("pack/lesson.md.j2").render(_lesson_vars(ctx, env, code))
    document += navigation_markdown(ctx, env)
    tokens = parse_blocks(document)  # one parse: the checks, lesson.md and the notebook all use it
    lesson_md, cells = split_cells(document, tokens)
    pack.files[spec.kernel_file] = code.encode()
    pack.files["lesson.md"] = lesson_md.encode()
    if page:
        pack.files["lesson.html"] = pack_page(
            ctx, env, lesson_md, None
        )  # rendered again when final
    pack.files["lesson.ipynb"] = build_notebook(cells, ctx.locale, ctx.heading)
    pack.cells = cells
    pack.files["check.py"] = checker_source(ctx).encode()
    for extra in spec.files:
        if extra.edition == "both" or ctx.answer:
            pack.files[extra.name] = ctx.lesson.files[extra.name]
    pack.files["requirements.txt"] = (
        env.get_template("pack/requirements.txt.j2")
        .render(heading=ctx.heading, min_torch=MIN_TORCH, min_triton=MIN_TRITON)
        .encode()
    )
    problems = check_markdown(
        document,
        _reachable(ctx, pack),
        f"{pack.name}/lesson.md (before notebook cells are removed)",
        tokens,
    )
    if problems:
        raise RenderError("\n".join(problems))
    return pack


def _reachable(ctx: LessonContext, pack: Pack) -> set[str]:
    """What a link in the pack's lesson.md may lead to."""
    return (
        set(pack.files)
        | {"README.md", "manifest.json", "lesson.ipynb", "lesson.html"}
        | {link["href"] for link in navigation(ctx) if link["href"]}
    )


def navigation_markdown(ctx: LessonContext, env: jinja2.Environment) -> str:
    """The lesson's last section, previous and next (navigation): lesson.md's and the notebook's."""
    return env.get_template("pack/navigation.md.j2").render(
        ui=ctx.ui, text=ctx.text, heading=ctx.heading, answer=ctx.answer, nav=navigation(ctx)
    )


def _as_bundle_folder(ctx: LessonContext, env: jinja2.Environment, pack: Pack) -> Pack:
    """A lesson's rendered pack as its course bundle's folder shows it (ctx.bundle): its
    navigation, the last section and notebook cell, links to the other lessons' folders."""
    own = navigation_markdown(dataclasses.replace(ctx, bundle=False), env)
    linked = navigation_markdown(ctx, env)
    text = pack.files["lesson.md"].decode()
    if not text.endswith(own) or not pack.cells or pack.cells[-1].source != own.strip("\n"):
        raise RenderError(
            f"{pack.name}: templates/pack/navigation.md.j2 must render a section of its own, "
            "starting with a # or ## heading (a course bundle's folder swaps it whole)"
        )
    folder = Pack(pack.lesson_id, pack.locale, pack.edition, dict(pack.files))
    folder.files["lesson.md"] = (text[: len(text) - len(own)] + linked).encode()
    folder.cells = [
        *pack.cells[:-1],
        dataclasses.replace(pack.cells[-1], source=linked.strip("\n")),
    ]
    problems = check_markdown(linked, _reachable(ctx, folder), f"{pack.name}/lesson.md (bundle)")
    if problems:
        raise RenderError("\n".join(problems))
    return folder


def _lesson_vars(ctx: LessonContext, env: jinja2.Environment, code: str) -> dict:
    ui, text, spec = ctx.ui, ctx.text, ctx.lesson.spec
    setup = env.get_template("pack/setup_cell.py.j2").render(
        note=ui.pack.notebook_setup,
        gpu_label=ui.pack.notebook_gpu,
        interpreter_label=ui.pack.notebook_interpreter,
    )
    check = env.get_template("pack/check_cell.py.j2").render(
        note=ui.pack.notebook_check, entry=spec.entry
    )
    return {
        "answer": ctx.answer,
        "ui": ui,
        "text": text,
        "heading": ctx.heading,
        "code": code,
        "figures": [text.figures[f] for f in spec.figures],
        "questions": [(q, text.questions[q]) for q in spec.questions],
        "hints": ctx.hints,
        "cell_code": without_main_block(code),
        "setup_code": setup.strip(),
        "check_code": check.strip(),
        "places": {place["place"]: place for place in answer_places(ctx)},
        "placeholder": ui.checker["report_answer_here"],
        "vetoes": [text.rubric.vetoes[v] for v in spec.rubric.vetoes],
    }


def answer_places(ctx: LessonContext, references: bool | None = None) -> list[dict]:
    """Where a student writes each answer, in the order of the pack: the explanation of the
    implementation (where a rubric part asks for it), the failing cases (always; a rubric part when
    one is declared) and each question. id: the rubric part's, the same in every edition and
    language (a notebook cell's metadata, a report's marker). references: with the reference
    answers (default: in the answer edition)."""
    text, spec = ctx.text, ctx.lesson.spec
    with_reference = ctx.answer if references is None else references
    declared = {part.where(): part.id for part in spec.rubric.manual}
    places = []
    if "implementation" in declared:
        part = text.rubric.parts[declared["implementation"]]
        places.append(
            {
                "id": declared["implementation"],
                "place": "implementation",
                "title": part.title,
                "prompt": part.prompt,
                "reference": part.reference if with_reference else None,
            }
        )
    failures = text.rubric.parts.get(declared.get("failures", ""))
    places.append(
        {
            "id": declared.get("failures", "failures"),
            "place": "failures",
            "title": failures.title if failures else ctx.ui.checker["report_failures"],
            "prompt": failures.prompt if failures else None,
            "reference": failures.reference if failures and with_reference else None,
        }
    )
    for qid in spec.questions:
        question = text.questions[qid]
        places.append(
            {
                "id": qid,
                "place": "question",
                "title": qid.upper(),
                "prompt": question.prompt,
                "reference": question.answer if with_reference else None,
            }
        )
    return places


def navigation(ctx: LessonContext) -> list[dict]:
    """Previous and next lesson: a relative link inside the course bundle; in a single-lesson pack,
    the other pack's name (a link would be broken there). Planned lessons are never links."""
    entries = ctx.content.course.lessons
    index = next(i for i, e in enumerate(entries) if e.id == ctx.lesson.spec.id)
    links = []
    for label, other in ((ctx.ui.pack.previous, index - 1), (ctx.ui.pack.next, index + 1)):
        if 0 <= other < len(entries):
            entry = entries[other]
            published = entry.status == "published"
            note = (
                ctx.ui.pack.other_pack.format(name=f"{entry.id}-{ctx.locale}-{ctx.edition}.zip")
                if published
                else ctx.ui.pack.planned_lesson
            )
            href = f"../{entry.id}/lesson.md" if published and ctx.bundle else None
            links.append(
                {
                    "label": label,
                    "heading": ctx.ui.heading(entry.id, entry.number),
                    "note": note,
                    "href": href,
                }
            )
    return links


def without_main_block(code: str) -> str:
    """The kernel file without its `if __name__ == "__main__":` demo: a notebook runs every cell as
    __main__, so the demo would run (and fail on the blank) before the student reaches the check."""
    lines = code.splitlines()
    kept = checker_lines_before_main(lines)
    return code if len(kept) == len(lines) else "\n".join(kept).rstrip() + "\n"


def checker_data(ctx: LessonContext) -> dict:
    """The lesson's data block in check.py: everything the generic checker needs, nothing else."""
    spec, text, checks = ctx.lesson.spec, ctx.text, ctx.lesson.spec.checks
    exercise = ctx.code(answer=False)
    exercise_code, blank_line = exercise.splitlines(), blank_index(exercise) + 1
    return {
        "lesson": spec.id,
        "locale": ctx.locale,
        "edition": ctx.edition,
        "edition_name": ctx.edition_name,
        "title": text.checker.title,
        "module": spec.kernel_file,
        "entry": spec.entry,
        "timeout_s": checks.timeout_s,
        "template": exercise_code,
        "blank_line": blank_line,
        "inputs": [item.model_dump(exclude_none=True) for item in checks.inputs],
        "outputs": [item.model_dump(exclude_none=True) for item in checks.outputs]
        or [{"name": "out", "check": "values"}],
        "named_outputs": bool(checks.outputs),
        "inplace": list(checks.inplace),
        "cases": [
            case.model_dump(exclude_defaults=True) | {"group": case.group} for case in checks.cases
        ],
        "poison": checks.poison,
        "compare": {k: v.model_dump() for k, v in checks.compare.items()},
        "reference": ctx.lesson.reference,
        "lesson_reasons": list(checks.reasons),
        "case_names": dict(text.checker.cases),
        "reasons": {reason: ctx.ui.checker[f"reason_{reason}"] for reason in OPTIONAL_REASONS}
        | dict(text.checker.reasons),
        "messages": dict(ctx.ui.checker),
        "hints": ctx.hints,
        "hint_names": list(ctx.ui.pack.hint_level_names),
        "rubric": {
            "normal": spec.rubric.normal,
            "boundary": spec.rubric.boundary,
            "explanation": spec.rubric.explanation,
            "questions": spec.rubric.question_points,
            "pass_total": spec.rubric.pass_total,
        },
        "questions": list(spec.questions),
        "answer_places": [
            {k: v for k, v in place.items() if k != "reference"}
            for place in answer_places(ctx, references=False)
        ],
        "bench": spec.bench,
        "bench_tables": dict(text.measured.tables),
        "platform_section": ctx.ui.pack.readme_machine_title,
    }


def mistake_code(ctx: LessonContext, mistake: Mistake) -> str:
    """A declared mistake as a kernel file: the blank filled wrongly, or the answer code edited."""
    if mistake.fill is not None:
        return ctx.code(fill=mistake.fill, answer=False)
    answer = ctx.code(answer=True)
    if answer.count(mistake.replace.old) != 1:
        raise RenderError(
            f"{ctx.lesson.folder.name}/lesson.yaml: checks.mistakes.{mistake.id}.replace.old: "
            f"occurs {answer.count(mistake.replace.old)} times in the generated {ctx.lesson.spec.kernel_file}"
            " (expected once; is it inside a comment?)"
        )
    return answer.replace(mistake.replace.old, mistake.replace.new)


def checker_source(ctx: LessonContext) -> str:
    # JSON text is readable, fast to write, and cannot contain three quotes in a row.
    _checker_code_after_data()
    return with_data(json.dumps(checker_data(ctx), ensure_ascii=False, indent=1, sort_keys=True))


@per_build
def _checker_code_after_data() -> bytes:
    """The generic checker after its data line (114 KB), the same in every check.py: deflated once
    per build for all the zips that hold one (archive.constant_part)."""
    return constant_part(joined().split(DATA_LINE, 1)[1].encode())


def finalize_pack(
    ctx: LessonContext, env: jinja2.Environment, pack: Pack, verification: dict | None
) -> Pack:
    """Add README.md, the verification record (answer edition) and the manifest."""
    try:
        return _finalize_pack(ctx, env, pack, verification)
    except jinja2.TemplateError as exc:
        raise located_template_error(exc, Path(env.loader.searchpath[0])) from exc


def _finalize_pack(
    ctx: LessonContext, env: jinja2.Environment, pack: Pack, verification: dict | None
) -> Pack:
    if ctx.bundle:
        pack = _as_bundle_folder(ctx, env, pack)
    ui, spec = ctx.ui, ctx.lesson.spec
    files = dict(pack.files)
    descriptions = dict(ui.pack.file_descriptions) | dict(ctx.text.files)
    if ctx.answer:
        descriptions["kernel"] = descriptions["kernel_answer"]
    listed = [
        "README.md",
        "lesson.md",
        *[n for n in ("lesson.html",) if n in descriptions],
        "lesson.ipynb",
        spec.kernel_file,
        "check.py",
        *[f.name for f in spec.files if f.edition == "both" or ctx.answer],
        "requirements.txt",
        "manifest.json",
    ]
    readme = env.get_template("pack/README.md.j2").render(
        heading=ctx.heading,
        edition_name=ctx.edition_name,
        ui=ui,
        kernel_file=spec.kernel_file,
        hint_levels=len(ctx.hints),
        verification=readme_verification(verification),
        files=[(name, descriptions.get(name, descriptions["kernel"])) for name in listed],
    )
    files["README.md"] = readme.encode()
    values = ((verification or {}).get("bench") or {}).get("values")
    for name in ("lesson.md", "README.md"):
        files[name] = fill_measured(
            files[name].decode(), values, ui.pack.measured_placeholder, f"{pack.name}/{name}"
        ).encode()
    cells = [
        dataclasses.replace(
            cell,
            source=fill_measured(
                cell.source, values, ui.pack.measured_placeholder, f"{pack.name}/lesson.ipynb"
            ),
        )
        if cell.kind == "markdown"
        else cell
        for cell in pack.cells
    ]
    measured = measured_section(ctx, verification) if ctx.answer else ""
    if measured:
        files["README.md"] += ("\n" + measured).encode()
        files["lesson.md"] += ("\n" + measured).encode()
        cells.append(Cell("markdown", measured.strip("\n"), "measured"))
    files["lesson.ipynb"] = build_notebook(cells, ctx.locale, ctx.heading)
    files["lesson.html"] = pack_page(
        ctx,
        env,
        files["lesson.md"].decode(),
        (verification or {}).get("bench") if ctx.answer else None,
    )
    if ctx.answer and verification is not None:
        files["verification.json"] = (
            json.dumps(verification, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        ).encode()
    final = Pack(pack.lesson_id, pack.locale, pack.edition, files)
    public = (
        None if verification is None else {k: v for k, v in verification.items() if k != "details"}
    )
    final.files["manifest.json"] = manifest(final, public)
    return final


def measured_section(ctx: LessonContext, verification: dict | None) -> str:
    """The bench's own numbers from the verification run, as Markdown tables (never hand-typed)."""
    bench = (verification or {}).get("bench")
    if not bench:
        return ""
    ui, titles = ctx.ui, ctx.text.measured.tables
    intro = ctx.text.measured.intro or ui.pack.measured_intro
    lines = [
        f"## {ui.headings.measured}",
        "",
        intro.format(
            device=bench["device"],
            torch=bench["torch"],
            triton=bench["triton"],
            elements=f"{bench['n']:,}",
        ),
        "",
    ]
    for table_id, rows in bench.get("tables", {}).items():
        if (
            rows and "tflops" in rows[0]
        ):  # a compute-bound table: TFLOP/s, and the ratio to its base row
            head = f"| | ms | TFLOP/s | {ui.checker.get('bench_vs_base', 'vs base')} |"
            body = [
                f"| {r['name']} | {r['ms']:.3f} | {r['tflops']:.1f} | {r['vs_base']:.2f} |"
                for r in rows
            ]
        else:
            head = "| | ms | GB/s | vs copy |"
            body = [
                f"| {r['name']} | {r['ms']:.3f} | {r['gbps']:.0f} | {r['vs_copy']:.2f} |"
                for r in rows
            ]
        lines += [f"**{titles.get(table_id, table_id)}**", "", head, "|---|---|---|---|", *body, ""]
    if bench.get("checks"):
        lines += [ui.pack.measured_checks, ""]
        lines += [
            f"- {'PASS' if ok else 'FAIL'} {name}" for name, ok in sorted(bench["checks"].items())
        ]
        lines.append("")
    return "\n".join(lines)


MEASURED = re.compile(r"\[\[measured:([A-Za-z0-9_]+)\]\]")


def fill_measured(text: str, values: dict[str, str] | None, placeholder: str, where: str) -> str:
    """[[measured:NAME]] in lesson text becomes the bench's value, or a marker when nothing was
    measured. A name the bench did not produce is an error: a lesson states no number its bench
    does not measure."""

    def value(match: re.Match[str]) -> str:
        if values is None:
            return placeholder
        if match.group(1) not in values:
            raise RenderError(
                f"{where}: [[measured:{match.group(1)}]]: the lesson's bench produced no such value "
                f"(it has: {', '.join(sorted(values)) or 'none'})"
            )
        return str(values[match.group(1)])

    return MEASURED.sub(value, text)


def readme_verification(verification: dict | None) -> dict | None:
    if verification is None:
        return None
    return {
        "runner": verification["runner_label"],
        "device": verification["device"],
        "torch": verification["torch"],
        "triton": verification["triton"],
        "date": verification["date"],
    }
