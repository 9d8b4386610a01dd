"""similarity.md and similarity.html: the matches of generator/grade/similarity.py, ranked, each
with both texts and the shared passages marked. Student text is only ever shown escaped."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup, escape

from generator.grade.pages import code, document, fenced, plain
from generator.grade.similarity import Match, Settings

KIND_TITLE = {
    "student": "another student",
    "reference": "the reference answer",
    "question": "the question",
    "earlier": "a student of an earlier term",
}


def _title(m: Match) -> str:
    return f"{m.part}: {m.student} and {m.other} ({KIND_TITLE[m.kind]}), {m.score:.0%} of fingerprints, {m.shared} shared"


def _passages(text: str, spans) -> list[str]:
    return [text[a:b] for a, b in spans]


def similarity_markdown(
    matches: list[Match], texts: dict[str, dict[str, str]], settings: Settings, students: int
) -> str:
    lines = [
        "# Similar answers and code",
        "",
        f"{len(matches)} matches among {students} students (threshold {settings.threshold:.0%} of the smaller "
        f"text's fingerprints, at least {settings.min_shared} shared; fingerprints that more than "
        f"{settings.common:.0%} of the class hold are ignored). A match is evidence to look at, not a verdict.",
        "",
    ]
    for rank, m in enumerate(matches, 1):
        mine = texts.get(m.student, {}).get(m.part, "")
        lines += [f"## {rank}. {plain(_title(m))}", "", "Shared passages:", ""]
        lines += [f"- {code(p)}" for p in _passages(mine, m.spans)]
        lines += [
            "",
            f"{plain(m.student)}:",
            "",
            *fenced(mine.splitlines()),
            "",
            f"{plain(m.other)}:",
            "",
            *fenced(m.other_text.splitlines()),
            "",
        ]
    return "\n".join(lines) + "\n"


def marked(text: str, spans) -> Markup:
    """text escaped, the spans inside <mark>."""
    out, at = [], 0
    for begin, end in spans:
        out += [
            escape(text[at:begin]),
            Markup("<mark>"),
            escape(text[begin:end]),
            Markup("</mark>"),
        ]
        at = end
    out.append(escape(text[at:]))
    return Markup("").join(out)


def similarity_html(
    matches: list[Match],
    texts: dict[str, dict[str, str]],
    settings: Settings,
    students: int,
    templates: Path,
) -> str:
    body = [
        Markup("<h1>Similar answers and code</h1>"),
        Markup("<p>{}</p>").format(
            f"{len(matches)} matches among {students} students (threshold "
            f"{settings.threshold:.0%}, at least {settings.min_shared} shared "
            "fingerprints). A match is evidence to look at, not a verdict."
        ),
    ]
    for rank, m in enumerate(matches, 1):
        mine = texts.get(m.student, {}).get(m.part, "")
        body.append(
            Markup(
                '<section class="match"><h2>{}. {}</h2><table><tr><th>{}</th><th>{}</th></tr>'
                "<tr><td><pre>{}</pre></td><td><pre>{}</pre></td></tr></table></section>"
            ).format(
                rank,
                _title(m),
                m.student,
                m.other,
                marked(mine, m.spans),
                marked(m.other_text, m.other_spans),
            )
        )
    return document(Markup("\n").join(body), "Similar answers and code", "en", templates)


def class_documents(rows) -> dict[str, dict[str, str]]:
    """student -> part -> text: each answered manual part (answers.json's texts) and the graded code."""
    documents = {}
    for row in rows:
        parts = {}
        for part, answer in ((row.answers or {}).get("parts") or {}).items():
            if answer.get("status") == "answered" and answer.get("text"):
                parts[part] = answer["text"]
        if row.submission is not None and row.submission.code:
            parts["code"] = row.submission.code
        if parts:
            documents[row.student] = parts
    return documents


def sources_of(rubric: dict) -> dict[str, dict[str, dict[str, str]]]:
    """part -> {"reference": {locale: text}, "question": {locale: text}} from rubric.json's content."""
    return {
        part["id"]: {"reference": part.get("reference") or {}, "question": part.get("prompt") or {}}
        for part in rubric["parts"]
        if part.get("kind") == "manual"
    }


def earlier_terms(folders: list[Path]) -> dict[str, dict[str, dict[str, str]]]:
    """An earlier term's class from its grading folder's similarity.json (term: the folder's path)."""
    import json
    from generator.grade.lesson import GradeError

    terms = {}
    for folder in folders:
        path = Path(folder) / "similarity.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            terms[str(folder)] = {
                str(s): {str(p): str(t) for p, t in parts.items()}
                for s, parts in data["documents"].items()
            }
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise GradeError(
                f"--compare-with {folder}: no readable similarity.json there ({exc}); "
                "grade that term again with this coursepack to write one"
            ) from exc
    return terms


def write_similarity(
    folder: Path,
    rows,
    rubric: dict,
    exercises: list[str],
    settings: Settings,
    earlier: dict,
    templates: Path,
) -> dict[str, str]:
    """similarity.md, similarity.html and similarity.json (this class's texts, for a later term's
    --compare-with) in folder; returns grades.csv's similar_to cell per student."""
    import json
    from generator.grade.similarity import compare_class, similar_to

    documents = class_documents(rows)
    matches = compare_class(documents, sources_of(rubric), exercises, settings, earlier)
    (folder / "similarity.md").write_text(
        similarity_markdown(matches, documents, settings, len(documents)), encoding="utf-8"
    )
    (folder / "similarity.html").write_text(
        similarity_html(matches, documents, settings, len(documents), templates), encoding="utf-8"
    )
    record = {
        "settings": settings.__dict__,
        "documents": documents,
        "matches": [
            {
                "part": m.part,
                "student": m.student,
                "kind": m.kind,
                "other": m.other,
                "score": m.score,
                "shared": m.shared,
            }
            for m in matches
        ],
    }
    (folder / "similarity.json").write_text(
        json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return similar_to(matches)
