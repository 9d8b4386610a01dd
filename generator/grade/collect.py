"""What students handed in, as instructors get it: one Submission per student, with the code to
grade (or the reason there is none). Reads files only; runs nothing.

Layouts (SUBMISSIONS is a folder, or a .zip of one, as an LMS exports it):

  folder per student    alice/<kernel file>, bob/submission.md, carol/work.zip   id: the folder name
  file per student      alice.py, bob.ipynb, carol.md, dave.zip             id: the file name's stem
  Gradescope export     submission_metadata.yml + submission_<n>/ folders    id: each submitter's sid
                        (or email); a group's submitters get one row each
  Canvas export         <name>_[LATE_]<user id>_<submission id>_<file>       id: the Canvas user id
                        (all in one folder; a resubmitted file's name gains -1, -2 before its suffix)
  Moodle export         <Full Name>_<participant id>_assignsubmission_file_/ (folders, the default
                        since Moodle 3.1), or the same prefix on each file    id: the participant id

What a student handed in (a folder, a file, zips of them, nested once more) is searched for, in
this order: the report `python check.py --report submission.md` writes (its code is re-run and
its claimed result compared); the lesson's kernel file (or any .py file that defines the lesson's
entry function); the lesson's notebook (its cell tagged `exercise`). Copies that still hold the
untouched blank count only when nothing else does. Different code of the same kind is ambiguous
(a row with the reason); code of a lower kind that differs is noted, not graded.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ruamel.yaml import YAML

from generator.checker.common import without_main_block
from generator.checker.static import blank_lines
from generator.grade.lesson import GradeLesson
from generator.verify import code_key

MAX_FILE_MIB = 20          # a file larger than this is not read
MAX_MEMBERS = 2000         # entries read from one zip archive
ZIP_DEPTH = 2              # zips inside zips inside what the student handed in
SKIPPED = ("__MACOSX", ".DS_Store", "Thumbs.db", "__pycache__", ".ipynb_checkpoints")
KINDS = ("report", "kernel", "notebook")   # in the order they are preferred

CANVAS = re.compile(r"^(?P<name>[^_/]+)_(?P<late>LATE_)?(?P<id>\d+)_(?P<sub>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>[^/]+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<suffix>\.[A-Za-z0-9]+)?$")
FENCE = re.compile(r"^```+\s*python\s*$(?P<code>.*?)^```+\s*$", re.M | re.S)

Reason = tuple[str, dict]   # a text key of grade.* and its values


@dataclass
class Submission:
    """One student's hand-in, read: the code to grade, or why there is none."""

    student: str
    name: str = ""
    email: str = ""
    layout: str = ""
    files: list[str] = field(default_factory=list)   # every file found, as paths under SUBMISSIONS
    source: str = ""                 # the file graded
    kind: str = ""                   # report, kernel or notebook
    code: str | None = None
    cell: int | None = None          # a notebook's exercise cell (1-based, as check.py counts)
    claim: str | None = None         # a report's claimed result (pass, fail, blank, load_error)
    locale: str | None = None        # the language of the pack it came from, when it shows
    digest: str = ""                 # sha256 of the graded file's bytes
    problem: Reason | None = None    # unreadable or ambiguous
    notes: list[Reason] = field(default_factory=list)
    late: bool = False


@dataclass
class _Candidate:
    kind: str
    path: str
    code: str
    data: bytes
    cell: int | None = None
    claim: str | None = None
    locale: str | None = None


# ---- reading the tree -------------------------------------------------------------------------

def read_tree(root: Path) -> dict[str, bytes | Reason]:
    """Every file under root (a folder, a zip, or one file) by POSIX path relative to root's parent
    folder for a file, to root for a folder or zip; a file too large to read maps to its reason."""
    if root.is_dir():
        tree: dict[str, bytes | Reason] = {}
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            if _skipped(rel):
                continue
            tree[rel] = _read(path, rel)
        return tree
    if root.suffix.lower() == ".zip":
        members = _unzip(root.read_bytes(), root.name)
        if isinstance(members, tuple):
            return {root.name: members}
        return members
    return {root.name: _read(root, root.name)}


def _read(path: Path, rel: str) -> bytes | Reason:
    if path.stat().st_size > MAX_FILE_MIB << 20:
        return ("too_large", {"file": rel, "limit": MAX_FILE_MIB})
    return path.read_bytes()


def _skipped(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return any(p in SKIPPED or p.startswith(".") for p in parts)


def _unzip(data: bytes, name: str) -> dict[str, bytes | Reason] | Reason:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in archive.infolist() if not i.is_dir() and not _skipped(i.filename)]
        found: dict[str, bytes | Reason] = {}
        for info in infos[:MAX_MEMBERS]:
            rel = PurePosixPath(info.filename.replace("\\", "/")).as_posix().lstrip("/")
            if ".." in PurePosixPath(rel).parts:
                continue
            found[rel] = (("too_large", {"file": f"{name}/{rel}", "limit": MAX_FILE_MIB})
                          if info.file_size > MAX_FILE_MIB << 20 else archive.read(info))
        return found
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        return ("unreadable_zip", {"file": name, "error": str(exc) or type(exc).__name__})


# ---- layouts: who handed in what -------------------------------------------------------------

@dataclass
class _Group:
    """The files of one student, and what the layout says of them."""

    layout: str
    name: str = ""
    email: str = ""
    late: bool = False
    files: dict = field(default_factory=dict)


def collect(root: Path, lesson: GradeLesson) -> list[Submission]:
    """One Submission per student found under root, in the order of their ids."""
    tree = _unwrapped(read_tree(root))
    groups: dict[str, _Group] = {}
    if root.is_file() and root.suffix.lower() != ".zip":   # one file: one student
        groups[Path(root.name).stem] = _Group("file", files=tree)
    metadata = _gradescope_metadata(tree) if not groups else None
    for rel, data in tree.items() if not groups else ():
        top, _, rest = rel.partition("/")
        if metadata is not None:
            for sid, name, email in metadata.get(top, []):
                groups.setdefault(sid, _Group("gradescope", name, email)).files[rel] = data
            continue
        moodle, canvas = MOODLE.match(top), CANVAS.match(top) if not rest else None
        if moodle and moodle.group("plugin") != "file":
            continue   # another Moodle plugin's folder (online text, comments): no code
        if moodle:
            group = groups.setdefault(moodle.group("id"), _Group("moodle", moodle.group("name")))
        elif canvas:
            group = groups.setdefault(canvas.group("id"), _Group("canvas", canvas.group("name")))
            group.late = group.late or bool(canvas.group("late"))
        elif rest:
            group = groups.setdefault(top, _Group("folder"))
        else:
            group = groups.setdefault(PurePosixPath(top).stem, _Group("file"))
        group.files[rel] = data
    found = []
    for sid in sorted(groups):
        group = groups[sid]
        submission = submission_of(sid, group.layout, group.name, group.files, lesson)
        submission.email, submission.late = group.email, group.late
        found.append(submission)
    return found


def _unwrapped(tree: dict) -> dict:
    """A Gradescope export kept in the one folder it unzips to: that folder's contents."""
    inner = [p for p in tree if p.count("/") == 1 and p.endswith("/submission_metadata.yml")]
    if "submission_metadata.yml" in tree or len(inner) != 1:
        return tree
    prefix = inner[0].rsplit("/", 1)[0] + "/"
    return {p[len(prefix):]: v for p, v in tree.items() if p.startswith(prefix)}


def _gradescope_metadata(tree: dict) -> dict[str, list[tuple[str, str, str]]] | None:
    """Gradescope's export: submission_metadata.yml maps each submission folder to its submitters
    (`:submitters:` with `:name:`, `:sid:`, `:email:`)."""
    data = tree.get("submission_metadata.yml")
    if not isinstance(data, bytes):
        return None
    try:
        doc = YAML(typ="safe").load(data.decode("utf-8"))
    except Exception:   # noqa: BLE001 - any YAML error: not an export we can read
        return None
    if not isinstance(doc, dict):
        return None
    found = {}
    for folder, record in doc.items():
        people = (record or {}).get(":submitters") if isinstance(record, dict) else None
        rows = []
        for person in people or []:
            if isinstance(person, dict):
                sid = str(person.get(":sid") or person.get(":email") or person.get(":name") or folder)
                rows.append((sid, str(person.get(":name") or ""), str(person.get(":email") or "")))
        found[str(folder)] = rows or [(str(folder), "", "")]
    return found


# ---- one student: which file is the code ------------------------------------------------------

def submission_of(sid: str, layout: str, name: str, files: dict[str, bytes | Reason],
                  lesson: GradeLesson) -> Submission:
    """One student's files (paths under SUBMISSIONS -> bytes, or why unread), read."""
    submission = Submission(sid, name, layout=layout, files=sorted(files))
    problems: list[Reason] = []
    candidates = []
    for path, data in _expand(files, problems):
        if isinstance(data, tuple):
            problems.append(data)
            continue
        found = _candidate(path, data, lesson, problems)
        if found is not None:
            candidates.append(found)
    if any(not blank_lines(c.code) for c in candidates):
        candidates = [c for c in candidates if not blank_lines(c.code)]
    chosen = _choose(candidates, submission)
    if chosen is None:
        if submission.problem is None:
            names = ", ".join(f"`{f}`" for f in submission.files)
            nothing = ("no_code", {"files": names}) if files else ("empty", {})
            submission.problem = problems[0] if problems else nothing
        return submission
    submission.source, submission.kind, submission.code = chosen.path, chosen.kind, chosen.code
    submission.cell, submission.claim = chosen.cell, chosen.claim
    submission.locale = chosen.locale or lesson.detect_locale(chosen.code)
    submission.digest = hashlib.sha256(chosen.data).hexdigest()
    return submission


def _expand(files: dict[str, bytes | Reason], problems: list[Reason], depth: int = 0):
    """(path, bytes or reason) of every file, zips opened (ZIP_DEPTH levels)."""
    for path, data in sorted(files.items()):
        if isinstance(data, bytes) and path.lower().endswith(".zip") and depth < ZIP_DEPTH:
            members = _unzip(data, path)
            if isinstance(members, tuple):
                problems.append(members)
                continue
            if not members:
                continue
            yield from _expand({f"{path}/{rel}": value for rel, value in members.items()}, problems, depth + 1)
        else:
            yield path, data


def _candidate(path: str, data: bytes, lesson: GradeLesson, problems: list[Reason]) -> _Candidate | None:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in (".py", ".ipynb", ".md"):
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        problems.append(("unreadable_text", {"file": f"`{path}`"}))
        return None
    if suffix == ".md":
        return _report(path, text, data, lesson, problems)
    if suffix == ".ipynb":
        return _notebook(path, text, data, lesson, problems)
    if _canonical(path) == lesson.spec.kernel_file or _defines_entry(text, lesson.spec.entry):
        return _Candidate("kernel", path, text, data)
    return None


def _canonical(path: str) -> str:
    """A file's name as the student gave it: Canvas's and Moodle's prefixes and Canvas's -N dropped."""
    base = PurePosixPath(path).name
    for pattern in (CANVAS, MOODLE):
        match = pattern.match(base)
        if match and match.group("file"):
            base = match.group("file")
    again = RESUBMITTED.match(base)
    return again.group("stem") + (again.group("suffix") or "") if again else base


def _defines_entry(text: str, entry: str) -> bool:
    return re.search(rf"^def\s+{re.escape(entry)}\s*\(", text, re.M) is not None


def _report(path: str, text: str, data: bytes, lesson: GradeLesson, problems: list[Reason]) -> _Candidate | None:
    """The report `check.py --report` writes, in any of the course's languages: its title, its
    `- result: X` line, its code block."""
    locale, claim = None, None
    for loc, language in lesson.languages.items():
        title = language.msg("report_title", lesson=language.data["title"])
        if re.search(rf"^#\s*{re.escape(title)}\s*$", text, re.M):
            locale = loc
        found = re.search(rf"^-\s*{re.escape(language.msg('report_status'))}\s*[:：]\s*(\w+)\s*$", text, re.M)
        if found and claim is None:
            claim, locale = found.group(1), locale or loc
    if locale is None:
        return None   # some other Markdown file (the pack's README, notes)
    block = FENCE.search(text)
    if block is None:
        problems.append(("unreadable_report", {"file": f"`{path}`"}))
        return None
    return _Candidate("report", path, block.group("code").strip("\n") + "\n", data, claim=claim, locale=locale)


def _notebook(path: str, text: str, data: bytes, lesson: GradeLesson, problems: list[Reason]) -> _Candidate | None:
    try:
        notebook = json.loads(text)
        cells = notebook["cells"]
        metadata = notebook.get("metadata") or {}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        problems.append(("unreadable_notebook", {"file": f"`{path}`", "error": type(exc).__name__}))
        return None
    for index, cell in enumerate(cells if isinstance(cells, list) else [], start=1):
        tags = (cell.get("metadata") or {}).get("tags") or [] if isinstance(cell, dict) else []
        if "exercise" in tags:
            source = cell.get("source", "")
            code = "".join(source) if isinstance(source, list) else str(source)
            language = metadata.get("language") if isinstance(metadata, dict) else None
            return _Candidate("notebook", path, code, data, cell=index,
                              locale=language if language in lesson.languages else None)
    problems.append(("unreadable_notebook", {"file": f"`{path}`", "error": lesson.languages[lesson.source_locale].msg(
        "no_exercise_cell", file=path)}))
    return None


def _same_code(code: str) -> str:
    """Code compared across a kernel file, a notebook cell and a report: no comments, no demo."""
    return code_key("\n".join(without_main_block(code.splitlines())) + "\n")


def _choose(candidates: list[_Candidate], submission: Submission) -> _Candidate | None:
    for rank, kind in enumerate(KINDS):
        mine = [c for c in candidates if c.kind == kind]
        if not mine:
            continue
        versions = {_same_code(c.code) for c in mine}
        if len(versions) > 1:
            submission.problem = ("ambiguous", {"files": ", ".join(f"`{c.path}`" for c in mine)})
            return None
        chosen = mine[0]
        others = [c for c in candidates if c.kind in KINDS[rank + 1:] and _same_code(c.code) not in versions]
        if others:
            submission.notes.append(("flag_other_code", {"files": ", ".join(f"`{c.path}`" for c in others)}))
        return chosen
    return None
