"""Deterministic, safe zips, and the atomic replacement of build/dist."""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import shutil
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from generator.files import memo
from generator.errors import CoursepackError
from generator.files.pack import Pack, file_digest

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o644
_DOS_TIME, _DOS_DATE = 0, (FIXED_TIME[0] - 1980) << 9 | FIXED_TIME[1] << 5 | FIXED_TIME[2]


class ArchiveError(CoursepackError):
    pass


def safe_entry(name: str) -> str:
    """A relative, normalised entry name, or an error: no '..', no absolute path, no backslash."""
    normal = posixpath.normpath(name)
    if (
        not name
        or name != normal
        or normal.startswith(("/", "../"))
        or normal == ".."
        or "\\" in name
        or ":" in name
        or any(part in ("", ".", "..") for part in name.split("/"))
    ):
        raise ArchiveError(f"unsafe file name in a pack: {name!r}")
    return normal


def zip_pack(pack: Pack) -> bytes:
    """The same files always give the same bytes: sorted entries, fixed times and permissions; the
    zip is read back and checked against the pack's manifest."""
    buffer = io.BytesIO()
    writer = ZipWriter(buffer, pack.name)
    for name in sorted(pack.files):
        writer.add(name, pack.files[name])
    writer.close()
    data = buffer.getvalue()
    check_zip(data, pack)
    return data


@dataclass(frozen=True)
class Entry:
    """A file deflated for a zip (deflated where it is made: a build's worker process)."""

    name: str  # in the pack, without its root
    packed: bytes  # raw deflate (zip method 8)
    crc: int
    size: int

    @classmethod
    def of(cls, name: str, data: bytes) -> "Entry":
        crc = crc32(data)
        key = (
            len(data),
            crc,
        )  # not the bytes themselves: hashing a 3.6 MB page costs as much as its CRC
        kept = memo.table("archive.deflated", lesson=True)
        found = kept.get(key)
        if found is None or found[0] != data:
            found = kept[key] = (data, deflate(data))
        return cls(safe_entry(name), found[1], crc, len(data))


# A lesson's zip, its course-bundle folder and its Quarto folder hold many of the same files
# (check.py, the kernel, bench.py): each is deflated once per lesson x locale (memo "archive.deflated").


class ZipWriter:
    """A zip written entry by entry to a binary file, by this module rather than by zipfile, so
    that a large constant part of a file (the vendored mermaid in every page) is deflated once per
    process instead of once per page. Fixed times and permissions; the central directory lists the
    entries sorted by name (in the order written: a pack's are sorted; a course bundle's come lesson
    by lesson), and it is all that stays in memory."""

    def __init__(self, out: BinaryIO, root: str):
        self.out, self.root, self.offset = out, root, 0
        self.central: dict[str, bytes] = {}  # name in the pack -> its central directory record

    def add(self, name: str, data: bytes) -> None:
        self.write(Entry.of(name, data))

    def write(self, item: Entry) -> None:
        entry = f"{self.root}/{item.name}".encode("utf-8")
        if item.name in self.central:
            raise ArchiveError(f"{self.root}.zip: {item.name} added twice")
        if max(item.size, len(item.packed), self.offset) >= 0xFFFFFFFF:
            raise ArchiveError(f"{self.root}.zip: {item.name} is too large for a zip without ZIP64")
        flags = 0x800 if not entry.isascii() else 0  # bit 11: the name is UTF-8
        fields = struct.pack(
            "<HHHHHIII", 20, flags, 8, _DOS_TIME, _DOS_DATE, item.crc, len(item.packed), item.size
        )
        self.central[item.name] = (
            struct.pack("<IH", 0x02014B50, (3 << 8) | 20)
            + fields
            + struct.pack(
                "<HHHHHII", len(entry), 0, 0, 0, 0, (stat.S_IFREG | FILE_MODE) << 16, self.offset
            )
            + entry
        )
        local = struct.pack("<I", 0x04034B50) + fields + struct.pack("<HH", len(entry), 0) + entry
        self.out.write(local)
        self.out.write(item.packed)
        self.offset += len(local) + len(item.packed)

    def close(self) -> None:
        central = b"".join(self.central[name] for name in sorted(self.central))
        count = len(self.central)
        if count >= 0xFFFF or self.offset + len(central) >= 0xFFFFFFFF:
            raise ArchiveError(
                f"{self.root}.zip: {count} entries, {self.offset} bytes: too many for a zip without ZIP64"
            )
        self.out.write(
            central
            + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), self.offset, 0)
        )


LEVEL = 6


def constant_part(data: bytes) -> bytes:
    """Declare data (at least 64 KiB) a part that many files contain whole: deflate() then reuses
    its compressed form, and a zip read back for checking inflates the rest of such a file only.
    Returns data. Kept for the build (its memo): outside one, nothing is declared.
    """
    parts = _constants()
    if len(data) >= 1 << 16 and data not in parts:
        parts[data] = _deflated_part(data)
    return data


@lru_cache(maxsize=4)
def _deflated_part(data: bytes) -> "_Constant":
    """data deflated and checked, by its bytes alone (pure): the parts are the vendored mermaid and
    the checker's code, the same in every build of a process, and 3.5 MB take a second to deflate."""
    packed = _deflate_part(data)
    if zlib.decompressobj(-15).decompress(packed) != data:  # checked once, here
        raise ArchiveError("a constant part does not inflate back to itself")
    return _Constant(packed, zlib.crc32(data), crc_x_power(8 * len(data)))


@dataclass(frozen=True)
class _Constant:
    packed: bytes  # deflated, byte-aligned (_deflate_part)
    crc: int  # its CRC-32
    shift: int  # x^(8 * its length) mod the CRC's polynomial


def _constants() -> dict[bytes, _Constant]:
    """The build's constant parts (large byte strings found in many files) by their bytes."""
    return memo.table("archive.constants")


# CRC-32 of a file that holds a constant part, from the CRC of the rest (as zlib's crc32_combine):
# appending n bytes to a message multiplies its CRC by x^(8n) modulo the polynomial, in GF(2), bits
# reflected; the appended bytes' own CRC is then added (xor).
_POLY = 0xEDB88320


def crc_times(a: int, b: int) -> int:
    """a(x) * b(x) modulo the CRC-32 polynomial (reflected: x^0 is the high bit)."""
    product, bit = 0, 1 << 31
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


def crc_x_power(n: int) -> int:
    """x^n modulo the CRC-32 polynomial."""
    result, square = 1 << 31, 1 << 30  # x^0 and x^1
    while n:
        if n & 1:
            result = crc_times(square, result)
        square = crc_times(square, square)
        n >>= 1
    return result


def crc32(data: bytes) -> int:
    """zlib.crc32(data), without reading its constant parts again: their CRCs are combined in."""
    crc, start, view = 0, 0, memoryview(data)
    for blob, part in _constants().items():
        at = find_part(data, blob, start) if len(data) - start >= len(blob) else -1
        if at >= 0:
            crc = crc_times(part.shift, zlib.crc32(view[start:at], crc)) ^ part.crc
            start = at + len(blob)
    return zlib.crc32(view[start:], crc)


def _deflate_part(data: bytes) -> bytes:
    """Raw deflate of data from a fresh state, ending byte-aligned on a full flush (no final block):
    such parts, joined and followed by a final block, are one valid deflate stream."""
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def find_part(data: bytes, part: bytes, start: int = 0) -> int:
    """data.find(part, start), without preparing a search pattern of all of part (3.5 MB of mermaid
    took 14 ms a page for that alone): its first 256 bytes are looked for, then the rest compared."""
    head = part[:256]
    at = data.find(head, start)
    while at >= 0 and not data.startswith(part, at):
        at = data.find(head, at + 1)
    return at


def deflate(data: bytes) -> bytes:
    """Raw deflate (zip method 8) of data; its constant parts come from their cache."""
    parts, start = [], 0
    for blob, part in _constants().items():
        at = find_part(data, blob, start) if len(data) - start >= len(blob) else -1
        if at >= 0:
            parts += [_deflate_part(data[start:at]), part.packed]
            start = at + len(blob)
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    return b"".join(parts + [compressor.compress(data[start:]), compressor.flush(zlib.Z_FINISH)])


def check_zip(data: bytes, pack: Pack) -> None:
    """Re-read a written zip and compare it with the pack's manifest."""
    for _ in checked_entries(io.BytesIO(data), pack.name, pack.files, pack.files):
        pass


def checked_entries(
    source: BinaryIO | Path,
    root: str,
    names: Iterable[str],
    written: dict[str, bytes] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """A written zip read back, entry by entry (name with its root, bytes), each checked against
    the manifest it holds; names: the files it must hold, no more (without the root). written:
    the files the zip was written from, where the caller has them: an entry that reads back as the
    same bytes has their digest (pack.file_digest, kept since the manifest was made from them),
    not a second sha256 of its own."""
    with zipfile.ZipFile(source) as archive:
        found = archive.namelist()
        expected = sorted(f"{root}/{n}" for n in names)
        if found != expected:
            raise ArchiveError(f"{root}.zip: entries {found} differ from the pack's files")
        manifest = json.loads(archive.read(f"{root}/manifest.json"))
        if sorted(manifest["files"]) != sorted(n for n in names if n != "manifest.json"):
            raise ArchiveError(f"{root}.zip: its manifest does not list every file")
        for info in archive.infolist():
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ArchiveError(f"{root}.zip: {info.filename} is a link")
            data = _read(archive, info)
            name = info.filename.split("/", 1)[1]
            source_bytes = (written or {}).get(name)
            digest = (
                file_digest(source_bytes)
                if source_bytes is not None and source_bytes == data
                else hashlib.sha256(data).hexdigest()
            )
            if name != "manifest.json" and digest != manifest["files"][name]:
                raise ArchiveError(f"{root}.zip: {name} does not match its sha256 in the manifest")
            yield info.filename, data


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, its CRC and size checked. An entry that holds a constant part (3.5 MB of
    mermaid in a page) is inflated around it: deflate() wrote the part from a fresh state, byte-
    aligned, and what follows from a fresh state too, so each side inflates on its own and the
    part is the bytes it was checked to inflate to (constant_part)."""
    if info.compress_type != zipfile.ZIP_DEFLATED or info.file_size < 1 << 16:
        return archive.read(info)
    archive.fp.seek(info.header_offset)
    header = archive.fp.read(30)
    if header[:4] != b"PK\x03\x04":
        raise ArchiveError(f"{info.filename}: no local header at its offset")
    archive.fp.seek(info.header_offset + 30 + sum(struct.unpack("<HH", header[26:30])))
    raw = archive.fp.read(info.compress_size)
    for blob, part in _constants().items():
        at = find_part(raw, part.packed)
        if at >= 0:
            try:
                before, after = (
                    zlib.decompressobj(-15).decompress(raw[:at]),
                    zlib.decompress(raw[at + len(part.packed) :], -15),
                )
            except zlib.error as exc:
                raise ArchiveError(f"{info.filename}: does not inflate: {exc}") from exc
            crc = zlib.crc32(
                after, crc_times(part.shift, zlib.crc32(before)) ^ part.crc
            )  # the part's bytes are known
            data = b"".join((before, blob, after))
            if len(data) != info.file_size or crc != info.CRC:
                raise ArchiveError(f"{info.filename}: its size or CRC differs from its header")
            return data
    return archive.read(info)


def recover_dir(target: Path) -> None:
    """Undo a swap that was interrupted between its two renames."""
    old = target.with_name(target.name + ".old")
    if old.exists() and not target.exists():
        os.replace(old, target)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def replace_dir(new: Path, target: Path) -> None:
    """Swap a finished folder in for target. Where the OS can exchange two paths atomically there is
    no moment without a whole target; elsewhere an interrupted swap is undone by recover_dir."""
    recover_dir(target)
    old = target.with_name(target.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists() and _exchange(new, target):
        shutil.rmtree(new)
        return
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    if old.exists():
        shutil.rmtree(old)


def write_tree(pack: Pack, folder: Path) -> Path:
    """Write a pack's files under folder/<pack name>/ (for verification runs)."""
    root = folder / pack.name
    if root.exists():
        shutil.rmtree(root)
    for name, data in pack.files.items():
        path = root / safe_entry(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root
