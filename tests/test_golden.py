"""Generated packs against the checked-in golden trees. Update them with `make golden`."""

import difflib

import pytest

from generator.checker.join import with_data
from tests.golden_update import GOLDEN, checker_data_text, current_packs, golden_names, real_course


@pytest.fixture(scope="module")
def packs() -> dict[str, dict[str, bytes]]:
    return current_packs()  # rendered when a test asks, not when every test process collects


def test_every_pack_has_a_golden_tree(packs):
    assert sorted(packs) == golden_names(), (
        "packs and golden trees differ: run `make golden` and review the result"
    )


@pytest.mark.parametrize("name", golden_names())
def test_pack_matches_golden(packs, name):
    folder = GOLDEN / name
    assert name in packs, f"{name} is no longer generated: run `make golden` and review the result"
    expected = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    actual = packs[name]
    assert sorted(actual) == sorted(expected), (
        "files differ from the golden tree; run `make golden` if intended"
    )
    for file in sorted(actual):
        if actual[file] != expected[file]:
            diff = "\n".join(
                list(
                    difflib.unified_diff(
                        expected[file].decode(errors="replace").splitlines(),
                        actual[file].decode(errors="replace").splitlines(),
                        f"golden/{name}/{file}",
                        f"generated/{name}/{file}",
                        lineterm="",
                    )
                )[:40]
            )
            pytest.fail(
                f"{name}/{file} differs from its golden copy (run `make golden` if intended):\n{diff}"
            )


def test_every_check_py_is_the_joined_checker_with_its_data():
    """The goldens keep check.py's data only: every generated check.py must be the joined checker
    with exactly that data."""
    for editions in real_course()[1].values():
        for _, pack in editions.values():
            check_py = pack.files["check.py"]
            data = checker_data_text(check_py).decode("utf-8").rstrip("\n")
            assert check_py.decode("utf-8") == with_data(data), pack.name
