"""build/report.json (for machines) and build/report.md (for people)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from generator.render.quarto import holds_answers

if TYPE_CHECKING:
    from generator.pipeline.options import BuildOptions, BuildResult


def report_data(options: "BuildOptions", result: "BuildResult") -> dict:
    return {
        "verified": options.verify,
        "runner": options.runner,
        "passed": not result.failed,
        "failed": result.failed,
        "seconds": round(result.seconds, 2),
        "zips": result.zips,
        "verification": {
            key: {k: v for k, v in rec.items() if k != "details"}
            for key, rec in result.verification.items()
        },
        "cached": result.cached,
        "gpu_vs_interpreter": result.disagreements,
        "translation_fallbacks": result.fallbacks,
        "tasks": result.tasks,
        "job_ids": result.job_ids,
        "instructor_only": sorted(
            name for name in result.zips if holds_answers(name)
        ),  # Quarto projects
    }


def report_markdown(data: dict) -> str:
    lines = ["# coursepack build report", ""]
    if not data["verified"]:
        lines += ["**NOT VERIFIED**: built with `--no-verify`; no reference solution was run.", ""]
    lines.append(f"Result: {'passed' if data['passed'] else 'FAILED'} in {data['seconds']} s.")
    lines.append("")
    for key, rec in data["verification"].items():
        cached = " (from cache)" if data["cached"].get(key) else ""
        lines += [
            f"## {key}{cached}",
            "",
            f"- runner: {rec['runner_label']} · {rec['device']} · torch {rec['torch']} · "
            f"triton {rec['triton']} · python {rec['python']} · {rec['date']}",
            f"- answer cases: {sum(c['status'] == 'pass' for c in rec['cases'])} passed, "
            f"{sum(c['status'] == 'skip' for c in rec['cases'])} skipped, "
            f"{sum(c['status'] not in ('pass', 'skip') for c in rec['cases'])} failed",
            f"- mistakes caught: {rec['mistakes_caught']}/{rec['mistakes_declared']}"
            + (
                f" ({rec['mistakes_unproven']} not provable on this runner: every case they fail is skipped)"
                if rec.get("mistakes_unproven")
                else ""
            ),
            f"- verification time: {rec['seconds']} s",
            "",
            "| step | result | seconds | detail |",
            "|---|---|---|---|",
        ]
        for step in rec["steps"]:
            lines.append(
                f"| {step['name']} | {'ok' if step['ok'] else 'FAIL'} | {step['seconds']} | "
                f"{step['detail'].replace('|', '/')[:200]} |"
            )
        skipped = [c["id"] for c in rec["cases"] if c["status"] == "skip"]
        if skipped:
            lines += ["", f"Skipped on this runner: {', '.join(skipped)}."]
        lines.append("")
        diffs = data["gpu_vs_interpreter"].get(key) or []
        if diffs:
            lines += [
                "GPU and interpreter disagree:",
                "",
                "| step | case | GPU | interpreter |",
                "|---|---|---|---|",
            ]
            lines += [
                f"| {d['step']} | {d['case']} | {d['gpu']} | {d['interpreter']} |" for d in diffs
            ]
            lines.append("")
    if data["translation_fallbacks"]:
        lines += ["## Translation fallbacks (marked in the packs)", ""]
        drafts = sorted({f["locale"] for f in data["translation_fallbacks"] if f.get("draft")})
        for locale in drafts:
            missing = [
                f
                for f in data["translation_fallbacks"]
                if f["locale"] == locale and f["kind"] == "missing"
            ]
            lines += [
                f"- {locale}: draft translation, {len(missing)} units in the source language",
                "",
            ]
        lines += ["| file | unit | state |", "|---|---|---|"]
        lines += [
            f"| {f['file']} | {f['unit']} | {f['kind']} |" for f in data["translation_fallbacks"]
        ]
        lines.append("")
    if data["tasks"]:
        lines += [
            "## Runner tasks",
            "",
            "| lesson | state | job | attempts | seconds |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {t['lesson']} | {t['state']} | {t['job_id'] or '-'} | {t['attempts']} | {t['seconds']} |"
            for t in data["tasks"]
        ]
        if data["job_ids"]:
            lines += ["", f"Slurm jobs used: {', '.join(data['job_ids'])}."]
        lines.append("")
    if data["failed"]:
        lines += ["## Failures", ""] + [f"- {f}" for f in data["failed"]] + [""]
    lines += ["## Zips", "", "| file | sha256 |", "|---|---|"]
    lines += [f"| {name} | `{digest}` |" for name, digest in sorted(data["zips"].items())]
    if data["instructor_only"]:
        lines += [
            "",
            f"**Instructor material, not for students**: {', '.join(data['instructor_only'])}. These Quarto website "
            "projects hold the answers (their answer profile); give students only the site that "
            "`quarto render --profile exercise` renders.",
        ]
    return "\n".join(lines) + "\n"


def write_reports(out, options: "BuildOptions", result: "BuildResult") -> None:
    data = report_data(options, result)
    (out / "report.json").write_text(
        json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    (out / "report.md").write_text(report_markdown(data), encoding="utf-8")
