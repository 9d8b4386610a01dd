"""Deterministic, safe zips, and the atomic replacement of build/dist."""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import shutil
import stat
import zipfile
from pathlib import Path

from generator.errors import CoursepackError
from generator.pack import Pack

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o644


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
    buffer = io.BytesIO()
    root = pack.name
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for name in sorted(pack.files):
            info = zipfile.ZipInfo(f"{root}/{safe_entry(name)}", date_time=FIXED_TIME)
            info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
            info.create_system = 3
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, pack.files[name], compresslevel=6)
    data = buffer.getvalue()
    check_zip(data, pack)
    return data


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
