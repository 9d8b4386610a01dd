"""What students handed in, as instructors get it: one Submission per student, with the code to
grade (or the reason there is none). Reads files only; runs nothing.

Layouts (SUBMISSIONS is a folder, or a .zip of one, as an LMS exports it):

  folder per student    alice/<kernel file>, bob/submission.md, carol/work.zip   id: the folder name
  file per student      alice.py, bob.ipynb, carol.md, dave.zip             id: the file name's stem
  Gradescope export     submission_metadata.yml + submission_<n>/ folders    id: each submitter's sid
                        (or email); a group's submitters get one row each
  Canvas export         all in one folder, as lib/content_zipper.rb names them:
                          <name>_[LATE_]<user id>_<file id>_<file>           id: the Canvas user id
                          [LATE_]anon_<anonymous id>_<file id>_<file>        id: the anonymous id
                            (anonymous grading: no name)
                          <name>_late_<user id>_<file id>_<file>             older exports (late in
                            lower case); <name> is the sortable name, filtered and lowercased
                          <...>_text.html, <...>_link.html                   online text or URL:
                            the same student
                        (a resubmitted file's name gains -1, -2 before its suffix)
  Moodle export         as mod/assign/classes/downloader.php (4.1 and later) and the older
                        locallib.php download_submissions name them:
                          <Full Name>_<id>_assignsubmission_file/            4.1+ (no trailing _)
                          <Full Name>_<id>_assignsubmission_file_/           3.1-4.0
                          <Full Name>_<id>_assignsubmission_file_<file>      one folder for all
                          <group name>_<group id>_assignsubmission_file/     team submissions
                            (one row per team; "Default group" has no id: its name is the id)
                          Participant_<id>_...                               blind marking
                          <...>_assignsubmission_onlinetext/ (and other plugins): the same
                            student's files, never a student of their own   id: the participant id

What a student handed in (a folder, a file, zips of them, nested once more) is searched for, in
this order: the report `python check.py --report submission.md` writes (its code is re-run and
its claimed result compared); the lesson's kernel file (or any .py file that defines the lesson's
entry function); the lesson's notebook (its cell tagged `exercise`). Copies that still hold the
untouched blank count only when nothing else does. Different code of the same kind is ambiguous
(a row with the reason); code of a lower kind that differs is noted, not graded.

Zips are opened only after their central directory is read: one refused there (more than
MAX_UNPACKED_MIB in all for one student's hand-in, zips inside zips counted, or compressed more
than MAX_RATIO to 1) is not unpacked at all, and a member that unpacks to more than its declared
size is refused as it is read (declared sizes can lie).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ruamel.yaml import YAML

from generator.checker.shared.common import without_main_block
from generator.checker.trusted.static import blank_lines
from generator.grade.lesson import GradeLesson
from generator.gate.verify import code_key

MAX_FILE_MIB = 20  # a file larger than this is not read
MAX_MEMBERS = 2000  # entries read from one zip archive
ZIP_DEPTH = 2  # zips inside zips inside what the student handed in
MAX_UNPACKED_MIB = 100  # all that one student's zips unpack to, zips inside zips included
MAX_EXPORT_MIB = 2048  # all that a class's export (SUBMISSIONS as one .zip) unpacks to
MAX_RATIO = 100  # unpacked to packed bytes of one zip (code compresses 3-10 to 1) ...
RATIO_FLOOR_MIB = 1  # ... once it unpacks to more than this
SKIPPED = ("__MACOSX", ".DS_Store", "Thumbs.db", "__pycache__", ".ipynb_checkpoints")
KINDS = ("report", "kernel", "notebook")  # in the order they are preferred

# Canvas: a file upload is "<filename>_<file id>_<file name>", an online text "<filename>_text.html",
# a URL "<filename>_link.html"; <filename> joins the lowercased name, LATE and the user id with _
# (no name and "anon_<id>" with anonymous grading). The name keeps only word characters, so it
# may hold _ but never _<digits>_ (Canvas removes those).
_CANVAS_TAIL = r"_(?:(?P<sub>\d+)_(?P<file>.+)|(?P<online>text|link)\.html)$"
CANVAS_ANON = re.compile(r"^(?P<late>LATE_)?anon_(?P<id>[A-Za-z0-9]+)" + _CANVAS_TAIL)
CANVAS = re.compile(r"^(?P<name>[^/]*?)_(?P<late>(?:LATE|late)_)?(?P<id>\d+)" + _CANVAS_TAIL)
# Moodle: "<prefix>_assignsubmission_<plugin>" as a folder (4.1+), the same with a trailing _
# (3.1-4.0), or with _<file name> after it (all in one folder); <prefix> is "<name>_<id>" with
# every _ of the name made a space, or a team's name alone for "Default group".
MOODLE = re.compile(
    r"^(?P<name>[^/]+?)(?:_(?P<id>\d+))?_assignsubmission_(?P<plugin>[a-z0-9]+)(?:_(?P<file>.*))?$"
)
RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<suffix>\.[A-Za-z0-9]+)?$")
FENCE = re.compile(r"^```+\s*python\s*$(?P<code>.*?)^```+\s*$", re.M | re.S)

Reason = tuple[str, dict]  # a text key of grade.* and its values


@dataclass
class Submission:
    """One student's hand-in, read: the code to grade, or why there is none."""

    student: str
    name: str = ""
    email: str = ""
    layout: str = ""
    files: list[str] = field(default_factory=list)  # every file found, as paths under SUBMISSIONS
    source: str = ""  # the file graded
    kind: str = ""  # report, kernel or notebook
    code: str | None = None
    cell: int | None = None  # a notebook's exercise cell (1-based, as check.py counts)
    claim: str | None = None  # a report's claimed result (pass, fail, blank, load_error)
    locale: str | None = None  # the language of the pack it came from, when it shows
    digest: str = ""  # sha256 of the graded file's bytes
    problem: Reason | None = None  # unreadable or ambiguous
    notes: list[Reason] = field(default_factory=list)
    late: bool = False
    documents: list[tuple[str, bytes]] = field(
        default_factory=list
    )  # .md and .ipynb files (zips opened):
    # where grading looks for the answers to the rubric's manual parts (generator/grade/answers.py)


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
        members = _unzip(root.read_bytes(), root.name, _Budget(MAX_EXPORT_MIB))
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


class _Budget:
    """What the zips of one hand-in (or of one class export) may still unpack to, in bytes."""

    def __init__(self, limit_mib: int):
        self.limit_mib, self.left = limit_mib, limit_mib << 20


class _Refused(Exception):
    def __init__(self, reason: Reason):
        super().__init__(reason[0])
        self.reason = reason


def _unzip(data: bytes, name: str, budget: _Budget) -> dict[str, bytes | Reason] | Reason:
    """A zip's members (POSIX path -> bytes, or why one was not read), or why none was: refused
    from its central directory's sizes before anything is unpacked, or unreadable."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in archive.infolist() if not i.is_dir() and not _skipped(i.filename)][
            :MAX_MEMBERS
        ]
        wanted = [i for i in infos if i.file_size <= MAX_FILE_MIB << 20]
        _check_sizes(wanted, name, budget)
        found: dict[str, bytes | Reason] = {}
        for info in infos:
            rel = PurePosixPath(info.filename.replace("\\", "/")).as_posix().lstrip("/")
            if ".." in PurePosixPath(rel).parts:
                continue
            found[rel] = (
                ("too_large", {"file": f"{name}/{rel}", "limit": MAX_FILE_MIB})
                if info.file_size > MAX_FILE_MIB << 20
                else _member(archive, info, name)
            )
        return found
    except _Refused as refused:
        return refused.reason
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        NotImplementedError,
        RuntimeError,
        ValueError,
        zlib.error,
    ) as exc:
        return ("unreadable_zip", {"file": name, "error": str(exc) or type(exc).__name__})


def _check_sizes(infos: list[zipfile.ZipInfo], name: str, budget: _Budget) -> None:
    unpacked = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if unpacked > budget.left:
        raise _Refused(("zip_too_large", {"file": name, "limit": budget.limit_mib}))
    if unpacked > RATIO_FLOOR_MIB << 20 and unpacked > MAX_RATIO * max(packed, 1):
        raise _Refused(
            ("zip_ratio", {"file": name, "ratio": unpacked // max(packed, 1), "limit": MAX_RATIO})
        )
    budget.left -= unpacked


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    """A member's bytes, read no further than its declared size (a member that unpacks to more is
    a lie about its size: the whole zip is refused)."""
    chunks, size = [], 0
    with archive.open(info) as stream:
        while chunk := stream.read(1 << 16):
            size += len(chunk)
            if size > info.file_size:
                raise _Refused(
                    (
                        "unreadable_zip",
                        {
                            "file": name,
                            "error": f"{info.filename} unpacks to more than "
                            f"its declared {info.file_size} bytes",
                        },
                    )
                )
            chunks.append(chunk)
    return b"".join(chunks)


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
    if root.is_file() and root.suffix.lower() != ".zip":  # one file: one student
        groups[Path(root.name).stem] = _Group("file", files=tree)
    metadata = _gradescope_metadata(tree) if not groups else None
    for rel, data in tree.items() if not groups else ():
        top, _, rest = rel.partition("/")
        if metadata is not None:
            for sid, name, email in metadata.get(top, []):
                groups.setdefault(sid, _Group("gradescope", name, email)).files[rel] = data
            continue
        layout, sid, name, late = _owner(top, rest)
        group = groups.setdefault(sid, _Group(layout, name))
        group.late = group.late or late
        group.files[rel] = data
    found = []
    for sid in sorted(groups):
        group = groups[sid]
        submission = submission_of(sid, group.layout, group.name, group.files, lesson)
        submission.email, submission.late = group.email, group.late
        found.append(submission)
    return found


def _owner(top: str, rest: str) -> tuple[str, str, str, bool]:
    """(layout, id, name, late) of a path's first part: a Moodle folder or file, a Canvas file, a
    folder or a file per student."""
    moodle = MOODLE.match(top)
    if moodle and (rest or moodle.group("file")):
        return "moodle", moodle.group("id") or moodle.group("name"), moodle.group("name"), False
    canvas = (CANVAS_ANON.match(top) or CANVAS.match(top)) if not rest else None
    if canvas:
        name = canvas.groupdict().get("name") or ""
        return "canvas", canvas.group("id"), name, bool(canvas.group("late"))
    if rest:
        return "folder", top, "", False
    return "file", PurePosixPath(top).stem, "", False


def _unwrapped(tree: dict) -> dict:
    """A Gradescope export kept in the one folder it unzips to: that folder's contents."""
    inner = [p for p in tree if p.count("/") == 1 and p.endswith("/submission_metadata.yml")]
    if "submission_metadata.yml" in tree or len(inner) != 1:
        return tree
    prefix = inner[0].rsplit("/", 1)[0] + "/"
    return {p[len(prefix) :]: v for p, v in tree.items() if p.startswith(prefix)}


def _gradescope_metadata(tree: dict) -> dict[str, list[tuple[str, str, str]]] | None:
    """Gradescope's export: submission_metadata.yml maps each submission folder to its submitters
    (`:submitters:` with `:name:`, `:sid:`, `:email:`)."""
    data = tree.get("submission_metadata.yml")
    if not isinstance(data, bytes):
        return None
    try:
        doc = YAML(typ="safe").load(data.decode("utf-8"))
    except Exception:  # noqa: BLE001 - any YAML error: not an export we can read
        return None
    if not isinstance(doc, dict):
        return None
    found = {}
    for folder, record in doc.items():
        people = (record or {}).get(":submitters") if isinstance(record, dict) else None
        rows = []
        for person in people or []:
            if isinstance(person, dict):
                sid = str(
                    person.get(":sid") or person.get(":email") or person.get(":name") or folder
                )
                rows.append((sid, str(person.get(":name") or ""), str(person.get(":email") or "")))
        found[str(folder)] = rows or [(str(folder), "", "")]
    return found


# ---- one student: which file is the code ------------------------------------------------------


def submission_of(
    sid: str, layout: str, name: str, files: dict[str, bytes | Reason], lesson: GradeLesson
) -> Submission:
    """One student's files (paths under SUBMISSIONS -> bytes, or why unread), read."""
    submission = Submission(sid, name, layout=layout, files=sorted(files))
    problems: list[Reason] = []
    candidates = []
    for path, data in _expand(files, problems, _Budget(MAX_UNPACKED_MIB)):
        if isinstance(data, tuple):
            problems.append(data)
            continue
        if path.lower().endswith((".md", ".ipynb")):
            submission.documents.append((path, data))
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


def _expand(
    files: dict[str, bytes | Reason], problems: list[Reason], budget: _Budget, depth: int = 0
):
    """(path, bytes or reason) of every file, zips opened (ZIP_DEPTH levels), all of them together
    within one budget."""
    for path, data in sorted(files.items()):
        if isinstance(data, bytes) and path.lower().endswith(".zip") and depth < ZIP_DEPTH:
            members = _unzip(data, path, budget)
            if isinstance(members, tuple):
                problems.append(members)
                continue
            if not members:
                continue
            yield from _expand(
                {f"{path}/{rel}": value for rel, value in members.items()},
                problems,
                budget,
                depth + 1,
            )
        else:
            yield path, data


def _candidate(
    path: str, data: bytes, lesson: GradeLesson, problems: list[Reason]
) -> _Candidate | None:
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
    for pattern in (CANVAS_ANON, CANVAS, MOODLE):
        match = pattern.match(base)
        if match and match.group("file"):
            base = match.group("file")
            break
    again = RESUBMITTED.match(base)
    return again.group("stem") + (again.group("suffix") or "") if again else base


def _defines_entry(text: str, entry: str) -> bool:
    return re.search(rf"^def\s+{re.escape(entry)}\s*\(", text, re.M) is not None


def _report(
    path: str, text: str, data: bytes, lesson: GradeLesson, problems: list[Reason]
) -> _Candidate | None:
    """The report `check.py --report` writes, in any of the course's languages: its title, its
    `- result: X` line, its code block."""
    locale, claim = None, None
    for loc, language in lesson.languages.items():
        title = language.msg("report_title", lesson=language.data["title"])
        if re.search(rf"^#\s*{re.escape(title)}\s*$", text, re.M):
            locale = loc
        found = re.search(
            rf"^-\s*{re.escape(language.msg('report_status'))}\s*[:：]\s*(\w+)\s*$", text, re.M
        )
        if found and claim is None:
            claim, locale = found.group(1), locale or loc
    if locale is None:
        return None  # some other Markdown file (the pack's README, notes)
    block = FENCE.search(text)
    if block is None:
        problems.append(("unreadable_report", {"file": f"`{path}`"}))
        return None
    return _Candidate(
        "report", path, block.group("code").strip("\n") + "\n", data, claim=claim, locale=locale
    )


def _notebook(
    path: str, text: str, data: bytes, lesson: GradeLesson, problems: list[Reason]
) -> _Candidate | None:
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
            return _Candidate(
                "notebook",
                path,
                code,
                data,
                cell=index,
                locale=language if language in lesson.languages else None,
            )
    problems.append(("no_exercise_cell", {"file": f"`{path}`"}))
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
        others = [
            c
            for c in candidates
            if c.kind in KINDS[rank + 1 :] and _same_code(c.code) not in versions
        ]
        if others:
            submission.notes.append(
                ("flag_other_code", {"files": ", ".join(f"`{c.path}`" for c in others)})
            )
        return chosen
    return None
