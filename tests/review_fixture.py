"""A grading folder as `coursepack grade` leaves it for the review (THE INTERFACE of issue 40:
rubric.json, answers.json; auto.json as generator/review/record.py writes it; grades.csv and
feedback pages as grading writes them), built by hand for the review's tests and its benchmark."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

TITLES = {
    "normal": ("正常输入", "normal inputs"),
    "boundary": ("边界输入", "boundary inputs"),
    "explanation": ("解释实现", "explain your implementation"),
    "q1": ("问题 1", "Question 1"),
    "q2": ("问题 2", "Question 2"),
    "q3": ("问题 3", "Question 3"),
}
EXERCISE = "\n".join(
    [
        "import triton",
        "import triton.language as tl",
        "",
        "@triton.jit",
        "def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n",
        "    x = tl.load(x_ptr + offs, mask=mask)",
        "    y = ______",
        "    tl.store(y_ptr + offs, y, mask=mask)",
        "",
    ]
)


def rubric() -> dict:
    def title(key):
        zh, en = TITLES[key]
        return {"zh-CN": zh, "en": en}

    parts = [
        {"id": "normal", "kind": "auto", "points": 2, "title": title("normal")},
        {"id": "boundary", "kind": "auto", "points": 1, "title": title("boundary")},
        {
            "id": "explanation",
            "kind": "manual",
            "points": 1,
            "title": title("explanation"),
            "prompt": {"zh-CN": "解释你的实现。", "en": "Explain your implementation."},
            "reference": {"zh-CN": "逐元素取 $\\max(x, 0)$。", "en": "Elementwise $\\max(x, 0)$."},
        },
    ]
    parts += [
        {
            "id": q,
            "kind": "manual",
            "points": 2,
            "title": title(q),
            "prompt": {
                "zh-CN": f"{q} 的题目：为什么需要 `mask`？",
                "en": f"{q}: why is `mask` needed?",
            },
            "reference": {
                "zh-CN": "尾部越界。",
                "en": "The tail would read past the end: $n \\bmod B$.",
            },
        }
        for q in ("q1", "q2", "q3")
    ]
    vetoes = [
        {"id": v, "title": {"zh-CN": zh, "en": en}}
        for v, zh, en in (
            ("lucky_result", "结果碰巧正确", "right by luck"),
            ("boundary_removed", "删除边界检查", "boundary checks removed"),
            ("unrun_claimed", "未运行却声称已测", "un-run result claimed as measured"),
        )
    ]
    return {
        "lesson": "lesson03_relu",
        "source_locale": "zh-CN",
        "locales": ["zh-CN", "en"],
        "pass_total": 8,
        "max_total": 10,
        "parts": parts,
        "vetoes": vetoes,
    }


ANSWER = EXERCISE.replace("______", "tl.maximum(x, 0.0)")


def student(i: int, code: str | None = ANSWER, **auto) -> dict:
    """One student's auto.json entry (code None: nothing was graded)."""
    sid = f"s{i:03d}"
    entry = {
        "id": sid,
        "name": f"Student Name{i}",
        "email": f"{sid}@uni.edu",
        "locale": "en" if i % 2 else "zh-CN",
        "slug": sid,
        "status": "graded",
        "points": {"normal": 2, "boundary": 1},
        "flags": [],
        "cases": [
            {
                "id": "seed",
                "group": "normal",
                "status": "pass",
                "name": "seed example",
                "reason": "",
            },
            {"id": "tail", "group": "boundary", "status": "pass", "name": "size 257", "reason": ""},
        ],
        "output": ["  PASS  seed example", "  PASS  size 257"],
        "graded_file": f"{sid}/relu.py",
        "code": code,
        "fill": "tl.maximum(x, 0.0)",
        "edits": [],
        "exercise": EXERCISE,
        "claim": None,
        "date": "2026-12-01T10:00:00Z",
    }
    entry.update(auto)
    return entry


def answer_set(text: str = "Because of the tail: $n$ is not a multiple of BLOCK.") -> dict:
    return {
        "source": "lesson.ipynb",
        "parts": {
            p: {"status": "answered", "text": f"{p}: {text}", "where": f"lesson.ipynb cell {k}"}
            for k, p in enumerate(("explanation", "q1", "q2", "q3"), start=10)
        },
    }


def make_folder(
    root: Path,
    n: int = 3,
    students: list[dict] | None = None,
    answers: dict[str, dict] | None = None,
) -> Path:
    folder = root / "grades" / "lesson03_relu"
    (folder / "feedback").mkdir(parents=True, exist_ok=True)
    students = students if students is not None else [student(i) for i in range(1, n + 1)]
    answers = answers if answers is not None else {s["id"]: answer_set() for s in students}
    (folder / "rubric.json").write_text(json.dumps(rubric(), ensure_ascii=False), encoding="utf-8")
    (folder / "answers.json").write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
    (folder / "auto.json").write_text(
        json.dumps({"lesson": "lesson03_relu", "students": students}, ensure_ascii=False),
        encoding="utf-8",
    )
    (folder / "grades.csv").write_text(grades_csv(students), encoding="utf-8")
    for s in students:
        (folder / "feedback" / f"{s['slug']}.md").write_text(
            f"# Feedback · {s['id']}\n\n- status: graded\n", encoding="utf-8"
        )
        (folder / "feedback" / f"{s['slug']}.html").write_text(
            f"<html><title>Feedback · {s['id']}</title></html>", encoding="utf-8"
        )
    return folder


def grades_csv(students: list[dict]) -> str:
    """As grading writes it: text cells that a spreadsheet would run made text (spreadsheet_safe)."""
    from generator.grade.gradebook import spreadsheet_safe

    header = [
        "student_id",
        "name",
        "email",
        "lesson",
        "status",
        "points_normal",
        "points_boundary",
        "points_automatic",
        "manual_explanation",
        "manual_q1",
        "manual_q2",
        "manual_q3",
        "flags",
    ]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(["POINTS POSSIBLE", "", "", "lesson03_relu", "", 2, 1, 3, 1, 2, 2, 2, ""])
    for s in students:
        p = s["points"]
        writer.writerow(
            [
                spreadsheet_safe(s["id"]),
                spreadsheet_safe(s["name"]),
                spreadsheet_safe(s["email"]),
                "lesson03_relu",
                s["status"],
                p["normal"],
                p["boundary"],
                p["normal"] + p["boundary"],
                "",
                "",
                "",
                "",
                ";".join(s["flags"]),
            ]
        )
    return out.getvalue()
