"""Generated packs against the checked-in golden trees. Update them with `make golden`."""

import difflib

import pytest

from tests.golden_update import GOLDEN, current_packs

PACKS = current_packs()


@pytest.mark.parametrize("name", sorted(PACKS))
def test_pack_matches_golden(name):
    folder = GOLDEN / name
    assert folder.is_dir(), f"no golden tree for {name}: run `make golden` and review the result"
    expected = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    actual = PACKS[name]
    assert sorted(actual) == sorted(expected), "files differ from the golden tree; run `make golden` if intended"
    for file in sorted(actual):
        if actual[file] != expected[file]:
            diff = "\n".join(list(difflib.unified_diff(
                expected[file].decode(errors="replace").splitlines(), actual[file].decode(errors="replace").splitlines(),
                f"golden/{name}/{file}", f"generated/{name}/{file}", lineterm=""))[:40])
            pytest.fail(f"{name}/{file} differs from its golden copy (run `make golden` if intended):\n{diff}")
