"""What the class got wrong, for the instructor: how many students in each status, the
distribution of automatic points (an SVG chart), the pass rate of every case, the failure reasons
counted across the class with the declared mistakes (lesson.yaml) that show the same reason, the
submissions that behave exactly like a declared mistake, and the flags."""

from __future__ import annotations

from collections import Counter
from html import escape

from generator.grade.feedback import STATUS_KEYS
from generator.grade.lesson import GradeLesson, Language
from generator.grade.pages import code, plain, table
from generator.grade.rows import STATUSES, Row, device_of, failed_cases, sandbox_of
from generator.gate.verify import shown_reason

CHART = "score_distribution.svg"


def reason_label(language: Language, reason: str) -> str:
    """A failure reason in words: the lesson's own text, or the kind of failure."""
    return language.data["reasons"].get(reason) or language.texts.get(f"kind_{reason}") or reason


def student_reasons(row: Row) -> set[str]:
    data = row.data or {}
    if data.get("status") == "load_error":
        return {"load_error"}
    if data.get("status") == "blank":
        return {"blank"}
    return {shown_reason(case) for case in failed_cases(data)}


def matching_mistakes(lesson: GradeLesson, row: Row) -> list[str]:
    """The declared mistakes whose failures (cases and reasons) this result shows exactly."""
    data = row.data or {}
    if data.get("status") != "fail":
        return []
    ran = {c["id"] for c in data["cases"] if c["status"] not in ("skip", "not_run")}
    failed = {c["id"]: shown_reason(c) for c in failed_cases(data)}
    found = []
    for mistake in lesson.mistakes:
        expected = lesson.expected_failures(mistake) & ran
        reasons_match = all(
            mistake.reason_for(case) in (None, reason) for case, reason in failed.items()
        )
        if set(failed) == expected and reasons_match:
            found.append(mistake.id)
    return found


def automatic_points(rows: list[Row]) -> Counter:
    """Students per automatic score: every student whose code was graded, a blank or a file that
    does not load included (0 points); not the missing or unreadable submissions."""
    return Counter(row.automatic for row in rows if row.data is not None)


def score_chart(rows: list[Row], maximum: int, language: Language) -> str:
    """Students per automatic score, as bars (deterministic SVG; text and axes in currentColor)."""
    counts = automatic_points(rows)
    top = max(counts.values(), default=0) or 1
    width, height, left, bottom, bar_gap = 420, 220, 44, 36, 6
    plot_w, plot_h = width - left - 10, height - bottom - 14
    step = plot_w / (maximum + 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" font-family="sans-serif" font-size="11" role="img">',
        f'<line x1="{left}" y1="{14 + plot_h}" x2="{width - 10}" y2="{14 + plot_h}" stroke="currentColor"/>',
        f'<line x1="{left}" y1="14" x2="{left}" y2="{14 + plot_h}" stroke="currentColor"/>',
        f'<text x="{left - 6}" y="18" text-anchor="end" fill="currentColor">{top}</text>',
        f'<text x="{left - 6}" y="{14 + plot_h}" text-anchor="end" fill="currentColor">0</text>',
    ]
    for points in range(maximum + 1):
        count = counts.get(points, 0)
        bar = plot_h * count / top
        x = left + points * step + bar_gap / 2
        parts.append(
            f'<rect x="{x:.1f}" y="{14 + plot_h - bar:.1f}" width="{step - bar_gap:.1f}" height="{bar:.1f}" '
            f'fill="#4c78a8"><title>{points}: {count}</title></rect>'
        )
        parts.append(
            f'<text x="{x + (step - bar_gap) / 2:.1f}" y="{14 + plot_h + 14}" text-anchor="middle" '
            f'fill="currentColor">{points}</text>'
        )
        if count:
            parts.append(
                f'<text x="{x + (step - bar_gap) / 2:.1f}" y="{14 + plot_h - bar - 3:.1f}" '
                f'text-anchor="middle" fill="currentColor">{count}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" fill="currentColor">'
        f"{escape(language.text('chart_points'))}</text>"
    )
    parts.append(
        f'<text x="12" y="{14 + plot_h / 2:.1f}" text-anchor="middle" fill="currentColor" '
        f'transform="rotate(-90 12 {14 + plot_h / 2:.1f})">{escape(language.text("chart_students"))}</text>'
    )
    return "\n".join(parts + ["</svg>"]) + "\n"


def summary_markdown(lesson: GradeLesson, rows: list[Row], locale: str, sandbox: str) -> str:
    language = lesson.languages[locale]
    text = language.text
    rubric = lesson.spec.rubric
    ran = [row for row in rows if row.data is not None]
    envs = Counter(
        (device_of(d), d["environment"]["torch"], d["environment"]["triton"])
        for d in (row.data for row in ran)
        if d.get("environment")
    )
    device, torch, triton = envs.most_common(1)[0][0] if envs else ("?", "?", "?")
    sandboxes = Counter(how for row in ran if (how := sandbox_of(row.data, sandbox)))
    sandbox = sandboxes.most_common(1)[0][0] if sandboxes else sandbox
    lines = [
        f"# {text('summary_title', lesson=lesson.heading(locale))}",
        "",
        text(
            "summary_intro",
            count=len(rows),
            device=device,
            torch=torch,
            triton=triton,
            sandbox=sandbox,
            checker=lesson.checker_hash[:16],
        ),
        "",
    ]
    statuses = Counter(row.status for row in rows)
    lines += [
        f"## {text('summary_statuses')}",
        "",
        *table(
            [text("col_status"), text("col_students")],
            [[text(STATUS_KEYS[s]), str(statuses[s])] for s in STATUSES if statuses[s]],
        ),
        "",
    ]
    lines += [
        f"## {text('summary_distribution')}",
        "",
        f"![{text('summary_distribution')}]({CHART})",
        "",
    ]
    scores = automatic_points(rows)
    lines += table(
        [text("col_points"), text("col_students")],
        [
            [f"{p}/{rubric.normal + rubric.boundary}", str(scores[p])]
            for p in range(rubric.normal + rubric.boundary, -1, -1)
        ],
    ) + [""]
    lines += [f"## {text('summary_cases')}", ""] + _case_table(lesson, ran, language) + [""]
    lines += [f"## {text('summary_reasons')}", ""] + _reasons(lesson, rows, language) + [""]
    lines += [f"## {text('summary_mistakes')}", ""] + _mistakes(lesson, rows, language) + [""]
    flags = Counter(flag for row in rows for flag in row.flags)
    lines += [f"## {text('summary_flags')}", ""]
    lines += (
        table(
            [text("col_flag"), text("col_students")],
            [[text(f"name_{flag}"), str(count)] for flag, count in flags.most_common()],
        )
        if flags
        else [text("summary_flags_none")]
    ) + [""]
    return "\n".join(lines)


def _case_table(lesson: GradeLesson, ran: list[Row], language: Language) -> list[str]:
    text = language.text
    rows = []
    for case in lesson.spec.checks.cases:
        statuses = Counter(
            next(
                (c["status"] for c in row.data.get("cases") or [] if c["id"] == case.id), "not_run"
            )
            for row in ran
        )
        passed, skipped = statuses["pass"], statuses["skip"]
        failed = sum(n for s, n in statuses.items() if s not in ("pass", "skip", "not_run"))
        rate = f"{100 * passed / (passed + failed):.0f}%" if passed + failed else "-"
        rows.append(
            [
                plain(language.data["case_names"][case.id]),
                text(f"group_{case.group}"),
                str(passed),
                str(failed),
                str(skipped),
                rate,
            ]
        )
    return table(
        [
            text("col_case"),
            text("col_group"),
            text("col_passed"),
            text("col_failed"),
            text("col_skipped"),
            text("col_rate"),
        ],
        rows,
    )


def _reasons(lesson: GradeLesson, rows: list[Row], language: Language) -> list[str]:
    counts = Counter(reason for row in rows for reason in student_reasons(row))
    if not counts:
        return [language.text("summary_reasons_none")]
    lines = []
    for reason, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        declared = [
            m.id
            for m in lesson.mistakes
            if reason in {m.reason_for(c) for c in lesson.expected_failures(m)} - {None}
        ]
        cases = Counter(
            c["id"] for row in rows for c in failed_cases(row.data) if shown_reason(c) == reason
        )
        line = (
            f"- {language.text('reason_line', count=count, reason=reason_label(language, reason))}"
        )
        if cases:
            line += " (" + ", ".join(code(case) for case, _ in cases.most_common(6)) + ")"
        lines.append(line)
        if declared:
            lines.append(
                f"  - {language.text('reason_matches', mistakes=', '.join(code(m) for m in declared))}"
            )
    return lines


def _mistakes(lesson: GradeLesson, rows: list[Row], language: Language) -> list[str]:
    """Students per declared mistake they behave like; mistakes that fail alike on this runner
    (two fills that only a GPU tells apart, say) are one line."""
    counts = Counter(tuple(found) for row in rows if (found := matching_mistakes(lesson, row)))
    if not counts:
        return [language.text("summary_mistakes_none")]
    lines = []
    for group, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        names = " / ".join(code(m) for m in group)
        codes = " / ".join(code(lesson.mistake_codes[m]) for m in group)
        lines.append("- " + language.text("mistake_line", count=count, mistake=names, code=codes))
    return lines
