"""What a build keeps between runs, all under build/cache/ (delete the folder to start over):

  verify/<key>.json     a verification record per lesson x locale, keyed by the generated files it
                        ran on, the runner and the runner's torch/triton/device
  bench/<key>.json      a lesson bench's measurements, keyed by the code it times and the runner
  ~/.cache/coursepack/probe/<kind>.json   the runner's versions and device, keyed by where torch
                        and triton live and when they changed: shared by every build folder, so a
                        cold build does not start torch once more just to ask its version
  last_build.json       the inputs digest and zips of the last successful build (the no-op check)

Values are JSON files written atomically (a crash never leaves half a file).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def write_json(path: Path, value: Any) -> None:
    write_text_atomically(path, json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True))


def write_text_atomically(path: Path, text: str) -> None:
    """The whole text or the file as it was: written beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class Store:
    """A folder of JSON values by key."""

    def __init__(self, folder: Path):
        self.folder = folder

    def get(self, name: str) -> Any:
        return read_json(self.folder / f"{name}.json")

    def put(self, name: str, value: Any) -> None:
        write_json(self.folder / f"{name}.json", value)

    def values(self) -> list[Any]:
        found = (
            [read_json(p) for p in sorted(self.folder.glob("*.json"))]
            if self.folder.exists()
            else []
        )
        return [v for v in found if v is not None]


class BuildCache:
    def __init__(self, out: Path):
        self.root = out / "cache"
        self.records = Store(self.root / "verify")
        self.benches = Store(self.root / "bench")
        user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        self.probes = user_cache / "coursepack" / "probe"
        self.last_build = self.root / "last_build.json"
