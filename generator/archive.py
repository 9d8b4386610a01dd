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
from pathlib import Path

from generator.errors import CoursepackError
from generator.pack import Pack

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o644
_DOS_TIME, _DOS_DATE = 0, (FIXED_TIME[0] - 1980) << 9 | FIXED_TIME[1] << 5 | FIXED_TIME[2]


class ArchiveError(CoursepackError):
    pass


def safe_entry(name: str) -> str:
    """A relative, normalised entry name, or an error: no '..', no absolute path, no backslash."""
    normal = posixpath.normpath(name)
    if (not name or name != normal or normal.startswith(("/", "../")) or normal == ".."
            or "\\" in name or ":" in name or any(part in ("", ".", "..") for part in name.split("/"))):
        raise ArchiveError(f"unsafe file name in a pack: {name!r}")
    return normal


_ZIPPED: dict[str, bytes] = {}   # recent zips by their inputs' digest: a zip is a pure function of them
_ZIPPED_KEEP = 64


def zip_pack(pack: Pack) -> bytes:
    """The same files always give the same bytes: sorted entries, fixed times and permissions."""
    digest = hashlib.sha256(pack.name.encode())   # the files themselves: a manifest may be stale
    for name in sorted(pack.files):
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(pack.files[name]).digest())
    key = digest.hexdigest()
    if key not in _ZIPPED:
        while len(_ZIPPED) >= _ZIPPED_KEEP:
            _ZIPPED.pop(next(iter(_ZIPPED)))
        _ZIPPED[key] = _zip(pack)
    return _ZIPPED[key]


def _zip(pack: Pack) -> bytes:
    """A zip written here rather than by zipfile, so that a large constant part of a file (the
    vendored mermaid in every page) is deflated once per process instead of once per page."""
    out, central = bytearray(), bytearray()
    names = sorted(pack.files)
    for name in names:
        entry = f"{pack.name}/{safe_entry(name)}".encode("utf-8")
        data = pack.files[name]
        packed = deflate(data)
        if max(len(data), len(packed), len(out)) >= 0xFFFFFFFF:
            raise ArchiveError(f"{pack.name}.zip: {name} is too large for a zip without ZIP64")
        flags = 0x800 if not entry.isascii() else 0   # bit 11: the name is UTF-8
        fields = struct.pack("<HHHHHIII", 20, flags, 8, _DOS_TIME, _DOS_DATE, zlib.crc32(data), len(packed), len(data))
        central += (struct.pack("<IH", 0x02014B50, (3 << 8) | 20) + fields
                    + struct.pack("<HHHHHII", len(entry), 0, 0, 0, 0, (stat.S_IFREG | FILE_MODE) << 16, len(out))
                    + entry)
        out += struct.pack("<I", 0x04034B50) + fields + struct.pack("<HH", len(entry), 0) + entry + packed
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(names), len(names), len(central), len(out), 0)
    data = bytes(out)
    check_zip(data, pack)
    return data


LEVEL = 6
_CONSTANT: dict[bytes, bytes] = {}   # large byte strings found in many files -> their deflated form


def constant_part(data: bytes) -> bytes:
    """Declare data (at least 64 KiB) a part that many files contain whole: deflate() then reuses
    its compressed form. Returns data."""
    if len(data) >= 1 << 16 and data not in _CONSTANT:
        _CONSTANT[data] = _deflate_part(data)
    return data


def _deflate_part(data: bytes) -> bytes:
    """Raw deflate of data from a fresh state, ending byte-aligned on a full flush (no final block):
    such parts, joined and followed by a final block, are one valid deflate stream."""
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def deflate(data: bytes) -> bytes:
    """Raw deflate (zip method 8) of data; its constant parts come from their cache."""
    parts, start = [], 0
    for blob, packed in _CONSTANT.items():
        at = data.find(blob, start)
        if at >= 0:
            parts += [_deflate_part(data[start:at]), packed]
            start = at + len(blob)
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    return b"".join(parts) + compressor.compress(data[start:]) + compressor.flush(zlib.Z_FINISH)


def check_zip(data: bytes, pack: Pack) -> None:
    """Re-read a written zip and compare it with the pack's manifest."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        expected = sorted(f"{pack.name}/{n}" for n in pack.files)
        if names != expected:
            raise ArchiveError(f"{pack.name}.zip: entries {names} differ from the pack's files")
        manifest = json.loads(archive.read(f"{pack.name}/manifest.json"))
        for name, digest in manifest["files"].items():
            if hashlib.sha256(archive.read(f"{pack.name}/{name}")).hexdigest() != digest:
                raise ArchiveError(f"{pack.name}.zip: {name} does not match its sha256 in the manifest")
        for info in archive.infolist():
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ArchiveError(f"{pack.name}.zip: {info.filename} is a link")


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
