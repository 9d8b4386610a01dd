"""gettext PO files: written the way GNU gettext's tools write them, read back with the line of
every entry, so that a problem in a translator's file is located as `file.po:LINE`.

Only what translators' tools (Poedit, Weblate, Crowdin, Lokalize, OmegaT) write is accepted:
comments (`#`, `#.`, `#:`, `#,`, `#|`), `msgctxt`, `msgid`, `msgstr`, continued strings, obsolete
entries (`#~`, skipped). Plural entries are refused: no unit has plural forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
KEYWORD = re.compile(r"^(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+(.*)$")
STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*$')


class PoSyntaxError(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


@dataclass
class Entry:
    msgid: str
    msgstr: str = ""
    msgctxt: str | None = None
    extracted: list[str] = field(default_factory=list)     # "#." notes for the translator
    references: list[str] = field(default_factory=list)    # "#:" file:line
    flags: list[str] = field(default_factory=list)         # "#," fuzzy, python-brace-format ...
    previous_msgid: str | None = None                      # "#| msgid": the source a fuzzy entry was translated from
    line: int = 0          # of the entry's first keyword
    msgstr_line: int = 0

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags


# ---- writing ----------------------------------------------------------------------------------

def _quote(text: str) -> str:
    return '"' + "".join(ESCAPES.get(ch, ch) for ch in text) + '"'


def _string(keyword: str, text: str, prefix: str = "") -> list[str]:
    """A keyword and its string; a text of several lines as gettext writes it: an empty first
    string, then one string per line."""
    pieces = text.splitlines(keepends=True)
    if len(pieces) <= 1:
        return [f"{prefix}{keyword} {_quote(text)}"]
    return [f"{prefix}{keyword} \"\""] + [f"{prefix}{_quote(piece)}" for piece in pieces]


def dump_entry(entry: Entry) -> str:
    lines = [f"#. {note}" for note in entry.extracted]
    lines += [f"#: {ref}" for ref in entry.references]
    if entry.flags:
        lines.append("#, " + ", ".join(entry.flags))
    if entry.previous_msgid is not None:
        if entry.msgctxt is not None:
            lines += _string("msgctxt", entry.msgctxt, "#| ")
        lines += _string("msgid", entry.previous_msgid, "#| ")
    if entry.msgctxt is not None:
        lines += _string("msgctxt", entry.msgctxt)
    lines += _string("msgid", entry.msgid) + _string("msgstr", entry.msgstr)
    return "\n".join(lines) + "\n"


def dump(header: dict[str, str], entries: list[Entry], comment: list[str]) -> str:
    head = Entry("", "".join(f"{key}: {value}\n" for key, value in header.items()))
    text = "".join(f"# {line}".rstrip() + "\n" for line in comment) + dump_entry(head)
    return text + "".join("\n" + dump_entry(entry) for entry in entries)


# ---- reading ----------------------------------------------------------------------------------

def _unquote(body: str, line: int) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1: i + 2]
        if nxt in UNESCAPES:
            out.append(UNESCAPES[nxt])
            i += 2
        elif re.match(r"[0-7]", nxt):
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group()
            out.append(chr(int(digits, 8)))
            i += 1 + len(digits)
        elif nxt == "x" and re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]).group()
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            raise PoSyntaxError(line, f"unknown escape \\{nxt} in a string (expected \\n, \\t, \\\", \\\\)")
    return "".join(out)


def _parse_string(rest: str, line: int) -> str:
    match = STRING.match(rest.strip())
    if match is None:
        raise PoSyntaxError(line, f"expected a string in double quotes, found {rest.strip()[:40]!r}")
    return _unquote(match.group(1), line)


class _Reader:
    """One entry at a time: comments, then keywords with their (continued) strings."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._reset()

    def _reset(self) -> None:
        self.fields: dict[str, list] = {}       # keyword -> [text, line]
        self.previous: dict[str, list] = {}
        self.comments = {"extracted": [], "references": [], "flags": []}
        self.last: list | None = None
        self.started = 0

    def finish(self, line: int) -> None:
        if not self.fields and not self.previous and not any(self.comments.values()):
            self._reset()
            return
        if "msgid" not in self.fields:
            raise PoSyntaxError(self.started or line, "an entry without msgid")
        if "msgstr" not in self.fields:
            raise PoSyntaxError(self.fields["msgid"][1], "msgid without msgstr")
        entry = Entry(self.fields["msgid"][0], self.fields["msgstr"][0],
                      self.fields["msgctxt"][0] if "msgctxt" in self.fields else None,
                      self.comments["extracted"], self.comments["references"], self.comments["flags"],
                      self.previous["msgid"][0] if "msgid" in self.previous else None,
                      line=(self.fields.get("msgctxt") or self.fields["msgid"])[1],
                      msgstr_line=self.fields["msgstr"][1])
        self.entries.append(entry)
        self._reset()

    def comment(self, text: str, number: int) -> None:
        if "msgstr" in self.fields:
            self.finish(number)
        self.started = self.started or number
        kind, rest = text[1:2], text[2:].strip()
        if kind == ".":
            self.comments["extracted"].append(rest)
        elif kind == ":":
            self.comments["references"] += rest.split()
        elif kind == ",":
            self.comments["flags"] += [flag.strip() for flag in rest.split(",") if flag.strip()]
        elif kind == "|":
            self._keyword(rest, number, self.previous)

    def keyword(self, text: str, number: int) -> None:
        match = KEYWORD.match(text)
        if match and match.group(1) in ("msgctxt", "msgid") and "msgstr" in self.fields:
            self.finish(number)
        self.started = self.started or number
        self._keyword(text, number, self.fields)

    def _keyword(self, text: str, number: int, into: dict[str, list]) -> None:
        if text.startswith('"'):
            if self.last is None:
                raise PoSyntaxError(number, "a string that continues no msgid, msgstr or msgctxt")
            self.last[0] += _parse_string(text, number)
            return
        match = KEYWORD.match(text)
        if match is None:
            raise PoSyntaxError(number, f"expected msgctxt, msgid or msgstr, found {text.split()[0][:30]!r}")
        word = match.group(1)
        if word == "msgid_plural" or word.startswith("msgstr["):
            raise PoSyntaxError(number, f"{word}: plural entries are not used (every unit is one text)")
        if word in into:
            raise PoSyntaxError(number, f"a second {word} in one entry (a blank line must separate entries)")
        into[word] = [_parse_string(match.group(2), number), number]
        self.last = into[word]


def parse(text: str) -> tuple[dict[str, str], int, list[Entry]]:
    """The header's fields, the header's line and the entries of a PO text; PoSyntaxError
    (with its line) for anything a PO file may not hold."""
    reader = _Reader()
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        line = raw.strip()
        if not line:
            if reader.fields:
                reader.finish(number)
            continue
        if line.startswith("#~"):   # obsolete entries: kept by translators' tools, never imported
            reader.last = None
            continue
        if line.startswith("#"):
            reader.comment(line, number)
            if not line.startswith("#|"):
                reader.last = None
            continue
        reader.keyword(line, number)
    reader.finish(len(text.splitlines()) + 1)
    entries = reader.entries
    if not entries or entries[0].msgid != "" or entries[0].msgctxt is not None:
        return {}, 0, entries
    header, fields = entries[0], {}
    for part in header.msgstr.split("\n"):
        key, sep, value = part.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields, header.line, entries[1:]
