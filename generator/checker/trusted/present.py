"""What the student (or the instructor) reads: lines in the pack's language, the score, the JSON,
the submission report. Made in the trusted process from the verdicts and what was seen."""
import json
from pathlib import Path

from ..shared.common import HERE, LESSON, inplace, msg, outputs


class Evaluation:
    """Everything a check found about one target."""

    def __init__(self, target, edits, fill, blank, env=None, results=None, load_error=None, timing=None,
                 flags=None, sandbox=None, review=None):
        self.target, self.edits, self.fill, self.blank = target, edits, fill, blank
        self.env, self.results, self.load_error = env, results or {}, load_error
        self.timing, self.sandbox = timing or {}, sandbox
        self.flags = dict(flags or {}, **(static_flags(review) if review is not None else {}))


def static_flags(review):
    """The flags the static review establishes (static.review), and `withheld`: why the code is
    not provably the student's Triton in the exercise (then automatic points wait for review)."""
    withheld = [why for why, present in (("unreviewed", review.get("unreviewed")),
                                         ("fill_not_triton", review.get("fill_not_triton")),
                                         ("no_fill", review.get("fill") is None and not review.get("unreviewed")),
                                         ("code_differs", review.get("code_differs") and review.get("fill") is not None))
                if present]
    return {"unreviewed": review.get("unreviewed"), "fill_not_triton": review.get("fill_not_triton"),
            "torch_computes": review.get("torch_computes") or [], "withheld": withheld}


def env_line(env):
    if env is None:
        return msg("env_unknown")
    versions = f"torch {env['torch']} · triton {env['triton']}"
    if env["interpreter"]:
        return msg("env_interpreter", versions=versions)
    return msg("env_gpu", device=env["device"], versions=versions)


def version_warning(env):
    verified = read_verified()
    if not verified or env is None:
        return None
    theirs = (verified.get("torch"), verified.get("triton"))
    if theirs != (env["torch"], env["triton"]):
        return msg("version_differs", torch=theirs[0], triton=theirs[1], runner=verified.get("runner_label", ""))
    return None


def read_verified():
    manifest = HERE / "manifest.json"
    try:
        record = json.loads(manifest.read_text(encoding="utf-8")).get("verification")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def position_text(position):
    if len(position) == 2:
        return msg("position_2d", row=position[0], column=position[1])
    return ", ".join(str(p) for p in position) if position else "0"


def inputs_text(inputs):
    if len(inputs) == 1:
        return next(iter(inputs.values()))
    return ", ".join(f"{name} = {value}" for name, value in inputs.items())


def case_detail(result):
    if result["status"] != "fail":
        return _status_detail(result)
    lines = _failure_detail(result)
    if result.get("output") and not result.get("property"):   # which output: "loss: index 3: ..."
        lines[0] = f"{result['output']}: {lines[0]}"
    if result.get("call"):
        lines.insert(0, msg("in_call", number=result["call"] + 1, values=_call_values(result.get("call_values") or {})))
    return lines


def _call_values(values):
    """The scalars a further call of the case passes, as text ("seed = 8")."""
    return ", ".join(f"{name} = {value}" for name, value in sorted(values.items()))


def _failure_detail(result):
    reasons = LESSON["reasons"]
    reason = result["reason"]
    if result.get("property"):
        lines = [(f"{result['output']}: " if result.get("output") else "") + msg("property_failed", detail=result["detail"])]
        return lines + ([msg("why", text=reasons[reason])] if reason in reasons else [])
    if reason in ("wrong_shape", "wrong_dtype"):
        return [msg(reason, expected=result["expected"], got=result["got"])]
    if reason == "not_tensor":
        names = [o["name"] for o in outputs() if o["name"] not in inplace()]
        if len(names) > 1:
            return [msg("not_tensors", got=result["got_type"], count=len(names), names=", ".join(names))]
        return [msg("not_tensor", got=result["got_type"])]
    if reason == "wrote_past_end":
        return [msg("wrote_past_end_detail", index=result["index"], n=result["n"]),
                msg("why", text=reasons["wrote_past_end"])]
    lines = [msg("mismatch", index=position_text(result["position"]), input=inputs_text(result["inputs"]),
                 expected=result["expected"], got=result["got"], count=result["count"], n=result["n"])]
    if reason in reasons:
        lines.append(msg("why", text=reasons[reason]))
    return lines


def _status_detail(result):
    status = result["status"]
    if status == "error":
        return [msg("raised", text=result["text"]) + (msg("at_line", line=result["line"]) if result.get("line") else "")]
    if status == "fault":
        return [msg("gpu_fault"), "  " + msg("raised", text=result["text"])]
    if status == "timeout":
        return [msg("timed_out", seconds=result["seconds"])]
    if status == "not_run":
        return [msg("not_run_lost", count=result["lost"])]
    if status == "crash":
        lines = [msg("crashed", code=result["code"])]
        return lines + ["  " + l for l in result.get("stderr", "").splitlines()[-3:]]
    return []


FAILED = ("fail", "error", "fault", "timeout", "crash")


def score(cases, results):
    rubric = LESSON["rubric"]
    points = {}
    for group in ("normal", "boundary"):
        ran = [c for c in cases if c["group"] == group and results.get(c["id"], {}).get("status") != "skip"]
        passed = [c for c in ran if results.get(c["id"], {}).get("status") == "pass"]
        points[group] = (rubric[group] * len(passed) // len(ran)) if ran else 0
    return points


def header_lines(target, env):
    lines = [msg("title", lesson=LESSON["title"], locale=LESSON["locale"], edition=LESSON["edition_name"]),
             msg("file_line", file=target.display if target.cell is None else target.where(1).rsplit(",", 1)[0])]
    if env is not None:
        lines.append(env_line(env))
        if env["interpreter"]:
            lines.append("  " + msg("interpreter_banner"))
        warning = version_warning(env)
        if warning:
            lines.append("  " + warning)
    return lines + [""]


def load_error_line(target, load_error):
    kind = load_error["kind"]
    if kind == "syntax":
        return msg("syntax_error", where=target.where(load_error["line"] or 1), text=load_error["text"])
    if kind == "import":   # the worker's word: the code under check ran there and may have written it
        where = target.where(load_error["line"]) if load_error.get("line") else target.display
        return msg("reported_import_error", where=where, text=load_error["text"])
    if kind == "timeout":
        return msg("import_timeout", seconds=load_error["seconds"])
    if load_error.get("code") == "setup":
        return load_error.get("text", "")
    return msg("worker_crashed", code=load_error.get("code", ""), text=load_error.get("text", ""))


def render_report(ev):
    """All lines a student sees, and the overall status."""
    target = ev.target
    lines = header_lines(target, ev.env)
    if ev.sandbox:
        lines.insert(-1, "  " + msg("sandbox_on", how=ev.sandbox))
    if ev.blank:
        lines += [msg("fill_blank", where=", ".join(target.where(n) for n in ev.blank)), msg("fill_blank_next")]
        return lines, "blank"
    if ev.load_error is not None:   # a syntax error is why the edits could not be reviewed: said once
        flags = dict(ev.flags, unreviewed=None) if ev.load_error["kind"] == "syntax" else ev.flags
        return lines + [load_error_line(target, ev.load_error)] + flag_lines(flags), "load_error"
    symbols = {"pass": "PASS", "skip": "SKIP", "not_run": "----"}
    for case in LESSON["cases"]:
        result = ev.results.get(case["id"], {"status": "crash", "code": "?"})
        name = LESSON["case_names"][case["id"]]
        if result["status"] == "skip":
            name += "  (" + LESSON["messages"]["skip_" + result["reason"]] + ")"
        lines.append(f"  {symbols.get(result['status'], 'FAIL'):4}  {name}")
        lines += ["        " + d for d in case_detail(result)]
    if ev.edits:
        lines += ["", msg("edits_outside", lines=", ".join(map(str, ev.edits)))]
    lines += flag_lines(ev.flags)
    points = score(LESSON["cases"], ev.results)
    rubric = LESSON["rubric"]
    key = "score_withheld" if ev.flags.get("withheld") else "score"
    why = "; ".join(msg("withheld_" + w) for w in ev.flags.get("withheld") or [])
    lines += ["", msg(key, got=points["normal"] + points["boundary"], total=rubric["normal"] + rubric["boundary"],
                      normal=points["normal"], normal_total=rubric["normal"], why=why,
                      boundary=points["boundary"], boundary_total=rubric["boundary"]),
              "       " + msg("score_graded", explanation=rubric["explanation"],
                              questions=rubric["questions"],
                              question_names=question_names(len(LESSON["questions"]), msg),
                              count=len(LESSON["questions"]))]
    failed = [c for c in LESSON["cases"] if ev.results.get(c["id"], {}).get("status") not in ("pass", "skip")]
    none_ran = all(ev.results.get(c["id"], {}).get("status") == "skip" for c in LESSON["cases"])
    lines.append(msg("next_fix") if failed else msg("next_none_ran") if none_ran
                 else msg("next_withheld") if ev.flags.get("withheld") else msg("next_submit"))
    return lines, "fail" if failed else "pass"


def question_names(count, text):
    """The questions a rubric line names: "Q1", or the span ("Q1-Q3") in the language's words."""
    return "Q1" if count == 1 else text("question_span", count=count)


def flag_lines(flags):
    """Notes for the grader beyond the cases: what the static review could not establish, a file
    that launched no Triton kernel of its own, what it replaced in torch, what it tried that a
    kernel has no business doing."""
    lines = []
    if flags.get("unreviewed"):
        lines.append(msg("flag_unreviewed", why=flags["unreviewed"]))
    if flags.get("fill_not_triton"):
        lines.append(msg("flag_fill_not_triton", why=flags["fill_not_triton"]))
    if flags.get("torch_computes"):
        lines.append(msg("flag_torch_computes", names=", ".join(flags["torch_computes"])))
    if flags.get("no_triton") and not flags.get("fill_not_triton"):   # that line says why already
        defined = ", ".join(flags.get("kernels_defined") or []) or msg("flag_none")
        lines.append(msg("flag_no_triton", defined=defined))
    if flags.get("patched"):
        lines.append(msg("flag_patched", names=", ".join(flags["patched"])))
    if flags.get("inputs_modified"):
        lines.append(msg("flag_inputs_modified", cases=", ".join(flags["inputs_modified"])))
    seen = {}   # the same attempt from the same line (a loop of forks, of kills) once, with its count
    for event in flags.get("events") or []:
        key = (event["kind"], event["line"], event["detail"] or event["event"])
        seen[key] = seen.get(key, 0) + 1
    for (kind, line, detail), count in seen.items():
        lines.append(msg("flag_event", kind=msg("event_" + kind) if "event_" + kind in LESSON["messages"] else kind,
                         line=line, detail=detail) + (msg("event_times", count=count) if count > 1 else ""))
    if flags.get("protocol"):
        lines.append(msg("flag_protocol", text=flags["protocol"][0]))
    return [""] + lines if lines else []


def json_result(ev, status):
    points = score(LESSON["cases"], ev.results) if status in ("pass", "fail") else {"normal": 0, "boundary": 0}
    if ev.flags.get("withheld") and status in ("pass", "fail"):   # what the cases gave waits for a review
        points = {"normal": 0, "boundary": 0, "withheld": points, "why": ev.flags["withheld"]}
    return {"lesson": LESSON["lesson"], "locale": LESSON["locale"], "edition": LESSON["edition"],
            "file": ev.target.display, "status": status, "environment": ev.env, "load_error": ev.load_error,
            "edits_outside_blank": ev.edits, "fill": ev.fill, "sandbox": ev.sandbox, "flags": ev.flags,
            "cases": [dict(id=c["id"], group=c["group"], **ev.results.get(c["id"], {"status": "not_run"}))
                      for c in LESSON["cases"]],
            "score": points}


def write_submission(path, ev, lines, status):
    target, env, results = ev.target, ev.env, ev.results
    ran = env is not None and status in ("pass", "fail")
    if not ran:
        run_kind = msg("report_static")
    elif env["interpreter"]:
        run_kind = msg("report_interpreter")
    else:
        run_kind = msg("report_gpu", device=env["device"])
    failed = [c for c in LESSON["cases"] if results.get(c["id"], {}).get("status") in FAILED]
    out = [f"# {msg('report_title', lesson=LESSON['title'])}", "",
           f"- {msg('report_run_kind')}: {run_kind}",
           f"- {msg('report_environment')}: {env_line(env).partition(': ')[2] if ran else msg('report_static')}",
           f"- {msg('report_status')}: {status}", "",
           f"## {msg('report_code')}", "", "```python", target.text.rstrip(), "```", "",
           f"## {msg('report_output')}", ""]
    out += (["```text", *lines, "```"] if ran else [msg("report_static"), "", "```text", *lines, "```"])
    out.append("")
    questions = [place for place in LESSON["answer_places"] if place["place"] == "question"]
    for place in LESSON["answer_places"]:
        if place is (questions or [None])[0]:
            out += [f"## {msg('report_questions')}", ""]
        out += answer_section(place, failed)
    Path(path).write_text("\n".join(out), encoding="utf-8")


def answer_section(place, failed):
    """One answer place of the report: its heading (with the rubric part's id), what is asked, the
    marker that grading finds the answer by (it survives edits that keep the comment), and where
    to write."""
    level = "###" if place["place"] == "question" else "##"
    lines = [f"{level} {place['title']} {{#part-{place['id']}}}", ""]
    if place.get("prompt"):
        lines += [("> " + line).rstrip() for line in place["prompt"].strip().splitlines()] + [""]
    lines += [f"<!-- coursepack:part={place['id']} -->", ""]
    if place["place"] != "failures":
        return lines + [msg("report_answer_here"), ""]
    if not failed:
        return lines + [msg("report_no_failures"), ""]
    for case in failed:
        lines += [f"### {LESSON['case_names'][case['id']]}", "", msg("report_explain_here"), ""]
    return lines
