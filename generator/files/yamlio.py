"""Read YAML content files into plain data plus the position of every key and value.

Every scalar stays text (YAML 1.2 composition, no implicit typing): a translator's answer
`no` or `1e3` is never turned into a boolean or a number. Values are read with ruamel's safe
(not round-trip) scanner: the round-trip one leaves a U+0007 fold marker at every fold of a folded
(`>`) scalar, for its own dumper's sake, and those markers used to reach every pack (issue 10.1).
Duplicate keys and anchors, tabs, syntax errors, non-UTF-8 bytes, oversized files and control characters
written as escapes in quoted values (`"\\a"`) become located problems instead of exceptions.
The node tree comes from libyaml (PyYAML's C parser) where it reads a file without complaint, and
from ruamel's pure-Python composer otherwise, whose messages and marks the problems quote (_compose).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import Node

from generator.files.cjkfold import rejoin
from generator.errors import ProblemCollector

try:  # libyaml through PyYAML: the same nodes as ruamel's pure-Python composer, ten times faster
    from yaml import CBaseLoader as _FastLoader  # no implicit types: every scalar stays text anyway
    from yaml import YAMLError as _FastError
except ImportError:  # PyYAML without libyaml, or none: ruamel alone
    _FastLoader = None

MAX_CONTENT_BYTES = 1 << 20
# C0 controls but newline and tab, DEL and C1 controls: nothing a pack should carry.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
NULL_WORDS = {"", "~", "null", "Null", "NULL"}
KeyPath = tuple[Any, ...]


@dataclass
class YamlDoc:
    """A loaded YAML file: its data and where each piece of it stands."""

    path: Path
    data: Any
    value_pos: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    key_pos: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    valid: bool = True  # cleared when the file's content fails its schema
    fold_markers: bool = False  # read the pre-10.1 way (see load_yaml)
    text: str = ""
    latin_folds: bool = False  # read the pre-39 way: every fold one space (see load_yaml)

    def position(self, keypath: KeyPath, of_key: bool = False) -> tuple[int, int]:
        """Line and column (1-based) of the deepest known part of keypath."""
        table = self.key_pos if of_key else self.value_pos
        for end in range(len(keypath), -1, -1):
            prefix = tuple(keypath[:end])
            if of_key and prefix in self.key_pos:
                return self.key_pos[prefix]
            if prefix in self.value_pos:
                return self.value_pos[prefix]
        return table.get((), (1, 1))


def read_text(path: Path, problems: ProblemCollector) -> str | None:
    """The file's text, or None after recording why it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        problems.add(path, "file not found")
        return None
    except OSError as exc:
        problems.add(path, f"cannot be read: {exc.strerror}")
        return None
    if len(raw) > MAX_CONTENT_BYTES:
        problems.add(
            path, f"file is {len(raw):,} bytes; content files are limited to {MAX_CONTENT_BYTES:,}"
        )
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        problems.add(
            path,
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
            line=line,
            column=column,
        )
        return None
    return text.removeprefix("\ufeff")


def load_yaml(
    path: Path, problems: ProblemCollector, *, fold_markers: bool = False, latin_folds: bool = False
) -> YamlDoc | None:
    """The file's data and positions, or None after recording why it cannot be read.

    A fold between two CJK characters joins them without a space (generator/files/cjkfold.py).
    fold_markers=True reproduces the reading before issue 10.1 (ruamel's round-trip composer, with
    U+0007 at each fold of a folded scalar), latin_folds=True the reading before issue 39 (a space
    at every fold); only the stamp migration (translate.refold_stamps) uses them, to recognise
    stamps computed on those readings.
    """
    text = read_text(path, problems)
    if text is None:
        return None
    try:
        root, reused = _compose(text, fold_markers)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(part for part in (exc.context, exc.problem) if part)
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        problems.add(path, f"YAML syntax: {what}", line=line, column=column)
        return None
    except YAMLError as exc:
        problems.add(path, f"YAML syntax: {exc}")
        return None
    for anchor, first_line, line, column in reused:
        problems.add(
            path,
            f"anchor &{anchor} is defined again (first at line {first_line}); "
            "give each anchor its own name",
            line=line,
            column=column,
        )
    doc = YamlDoc(
        path, None, fold_markers=fold_markers, text=text, latin_folds=latin_folds or fold_markers
    )
    if root is None:
        problems.add(path, "the file is empty; expected a mapping of keys", line=1, column=1)
        return None
    doc.data = _convert(root, (), doc, problems)
    return doc


class _AnchorComposer(Composer):
    """ruamel's composer, which keeps each anchor defined a second time (name, line of the first,
    line and column of this one) where ruamel would issue a Python warning about it."""

    def __init__(self, loader=None):
        super().__init__(loader)
        self.reused: list[tuple[str, int, int, int]] = []

    def compose_node(self, parent, index):
        event = self.parser.peek_event()
        anchor = None if isinstance(event, AliasEvent) else event.anchor
        if anchor is not None and anchor in self.anchors:
            first = self.anchors.pop(anchor)  # the new node takes the name, as YAML says
            self.reused.append(
                (
                    anchor,
                    first.start_mark.line + 1,
                    event.start_mark.line + 1,
                    event.start_mark.column + 1,
                )
            )
        return super().compose_node(parent, index)


@lru_cache(maxsize=256)
def _compose(
    text: str, fold_markers: bool
) -> tuple[Node | None, tuple[tuple[str, int, int, int], ...]]:
    """The node tree of a text (the slow part of reading YAML in pure Python) and its reused
    anchors. Kept per text: a process that loads the content again (i18n commands, tests) re-reads
    only the files that changed. The tree is never modified: _convert only reads it.

    libyaml composes it where it reads the text without complaint and without reused anchors;
    anything else (a syntax error, an anchor defined twice) is composed again by ruamel, whose
    messages and marks the problems quote. tests/test_yamlio.py holds the two to the same trees."""
    if not fold_markers:
        fast = fast_compose(text)
        if fast is not None:
            return fast, ()
    yaml = YAML(typ="rt" if fold_markers else "safe", pure=True)
    yaml.Composer = _AnchorComposer
    root = yaml.compose(text)
    return root, tuple(yaml.composer.reused)


def fast_compose(text: str) -> Node | None:
    """libyaml's node tree of text, or None where libyaml is missing or finds anything to say about
    the text."""
    if _FastLoader is None:
        return None
    loader = _FastLoader(text)
    try:
        root = loader.get_single_node()
    except _FastError:
        return None
    finally:
        loader.dispose()
    return root


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(node: Node, keypath: KeyPath, doc: YamlDoc, problems: ProblemCollector) -> Any:
    doc.value_pos[keypath] = _mark(node)
    if node.id == "scalar":
        if (
            not node.style and node.value in NULL_WORDS
        ):  # plain: style None in ruamel, "" in libyaml
            return None
        bad = CONTROL.search(node.value)
        if bad and not doc.fold_markers:
            line, column = _mark(node)
            problems.add(
                doc.path,
                f"control character U+{ord(bad.group()):04X} in a text value "
                "(an escape such as \\a or \\x1b in quotes); remove it",
                _dotted(keypath),
                line,
                column,
            )
        if (
            node.style in (None, "", ">")
            and node.start_mark.line != node.end_mark.line
            and not doc.latin_folds
        ):
            return rejoin(
                doc.text, node.start_mark.index, node.end_mark.index, node.style, node.value
            )
        return node.value
    if node.id == "sequence":
        return [_convert(item, keypath + (i,), doc, problems) for i, item in enumerate(node.value)]
    if node.id == "mapping":
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.id != "scalar":
                line, column = _mark(key_node)
                problems.add(doc.path, "keys must be plain text", _dotted(keypath), line, column)
                continue
            key = key_node.value
            child = keypath + (key,)
            if key in result:
                line, column = _mark(key_node)
                first = doc.key_pos[child]
                problems.add(
                    doc.path,
                    f"duplicate key (first defined at line {first[0]})",
                    _dotted(child),
                    line,
                    column,
                )
                continue
            doc.key_pos[child] = _mark(key_node)
            result[key] = _convert(value_node, child, doc, problems)
        return result
    return None


def _dotted(keypath: KeyPath) -> str:
    return ".".join(str(part) for part in keypath)


dotted = _dotted
