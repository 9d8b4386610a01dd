"""A pack in memory: relative file names mapped to bytes, plus what it is."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Literal

from generator.files import memo

Edition = Literal["exercise", "answer"]
EDITIONS: tuple[Edition, ...] = ("exercise", "answer")
# Files written after verification: they never take part in it. (lesson.html is rendered early
# too, for the leak scan and the edition pairing, and again from the final lesson.md.)
FINAL_FILES = ("README.md", "manifest.json", "verification.json", "lesson.html")


@dataclass
class Pack:
    lesson_id: str
    locale: str
    edition: Edition
    files: dict[str, bytes] = field(default_factory=dict)
    cells: list = field(
        default_factory=list, compare=False, repr=False
    )  # lesson.ipynb's (markdown.Cell), as rendered:
    # finalize_pack fills in the measured values and builds the notebook from them, not from its JSON

    @property
    def name(self) -> str:
        return f"{self.lesson_id}-{self.locale}-{self.edition}"

    def verified_files(self) -> dict[str, bytes]:
        return {name: data for name, data in self.files.items() if name not in FINAL_FILES}

    def content_hash(self) -> str:
        """Hash of every file that verification runs on."""
        digest = hashlib.sha256()
        for name, data in sorted(self.verified_files().items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()


def file_digest(data: bytes) -> str:
    """sha256 of a file's bytes, hex; kept for the lesson by the bytes object itself (held in the
    memo, so its id stays its own): a lesson's manifest, its bundle folder, its Quarto folder and
    its zip's read-back all ask for the same objects' digests."""
    kept = memo.table("pack.digests", lesson=True)
    found = kept.get(id(data))
    if found is not None and found[0] is data:
        return found[1]
    digest = hashlib.sha256(data).hexdigest()
    kept[id(data)] = (data, digest)
    return digest


def manifest(pack: Pack, verification: dict | None, digests: dict[str, str] | None = None) -> bytes:
    """sha256 of every file, and how (or whether) the pack was verified. digests: each file's sha256
    where the pack does not hold the files (a course bundle is written to its zip lesson by lesson)."""
    if digests is None:
        digests = {
            name: file_digest(data) for name, data in pack.files.items() if name != "manifest.json"
        }
    entries = {name: digests[name] for name in sorted(digests) if name != "manifest.json"}
    body = {
        "pack": pack.name,
        "lesson": pack.lesson_id,
        "locale": pack.locale,
        "edition": pack.edition,
        "verified": verification is not None,
        "verification": verification or "NOT VERIFIED: built with --no-verify",
        "files": entries,
    }
    return (json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode()
