"""Repository hygiene (issue 10.9): measurement logs are the ones BENCHMARKS.md cites, every local
link in the top-level documents resolves, and no script is tied to one machine's fixed paths."""

import re

from tests.conftest import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
DOCS = (
    "README.md",
    "BENCHMARKS.md",
    "TRANSLATING.md",
    *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")),
)


def test_measurement_logs_are_exactly_those_benchmarks_cites():
    """The logs under docs/measurements/ are those that BENCHMARKS.md or the measurement history
    (docs/measurements/*.md) link to, relative to the citing file."""
    cited = set()
    for doc in [REPO / "BENCHMARKS.md", *(REPO / "docs" / "measurements").glob("*.md")]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if "://" not in target:
                cited.add((doc.parent / target).resolve().relative_to(REPO.resolve()).as_posix())
    kept = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "docs" / "measurements").iterdir()
        if p.suffix != ".md"
    }
    assert kept <= cited, sorted(kept - cited)
    assert not (REPO / "docs" / "runs").exists()


def test_local_links_resolve():
    broken = [
        f"{doc}: {target}"
        for doc in DOCS
        for target in LINK.findall((REPO / doc).read_text(encoding="utf-8"))
        if "://" not in target and not ((REPO / doc).parent / target).exists()
    ]
    assert broken == []


def test_the_readme_stays_short():
    """What it is, the two commands, the CLI and links: the rest lives in docs/ by audience."""
    assert len((REPO / "README.md").read_bytes()) <= 12 * 1024


def test_scripts_use_no_fixed_tmp_paths():
    fixed = [
        f"{p.name}: {line.strip()}"
        for p in (REPO / "scripts").glob("*.sh")
        for line in p.read_text(encoding="utf-8").splitlines()
        if re.search(r"(?<![\w}])/tmp/", line) and not line.lstrip().startswith("#")
    ]
    assert fixed == []
