"""The content loader under hypothesis: a located ContentError or success, never a traceback."""

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.errors import ContentError
from generator.loader import load_content
from tests.conftest import REPO

TARGET = Path("lessons/lesson03_relu/text.en.yaml")
ORIGINAL = (REPO / "content" / TARGET).read_text(encoding="utf-8")
_ROOT = Path(tempfile.mkdtemp(prefix="coursepack-fuzz-"))
shutil.copytree(REPO / "content", _ROOT / "content")


def load_with(text: str):
    (_ROOT / "content" / TARGET).write_text(text, encoding="utf-8")
    try:
        load_content(_ROOT / "content")
    except ContentError as exc:
        for problem in exc.problems:
            assert problem.location.path and problem.message
        return exc
    return None


yaml_scalars = st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none(),
                         st.sampled_from(["no", "on", "1e3", "~", "null", "- x", ": y", "'q", '"', "&a", "*a", "!!int 3"]))


def to_yaml(node, indent=0):
    pad = " " * indent
    if isinstance(node, dict):
        return "".join(f"{pad}{key}:\n{to_yaml(value, indent + 2)}" if isinstance(value, (dict, list))
                       else f"{pad}{key}: {value}\n" for key, value in node.items())
    if isinstance(node, list):
        return "".join(f"{pad}-\n{to_yaml(value, indent + 2)}" if isinstance(value, (dict, list))
                       else f"{pad}- {value}\n" for value in node)
    return f"{pad}{node}\n"


documents = st.recursive(yaml_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.sampled_from(["goal", "model", "what", "x", "hints", "q1"]),
                                                    children, max_size=4)), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_documents(document):
    load_with(to_yaml(document))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutations_of_the_real_lesson(data):
    lines = ORIGINAL.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        kind = data.draw(st.sampled_from(["delete", "duplicate", "insert", "swap", "dedent", "indent"]))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "insert":
            lines.insert(i, data.draw(st.text(max_size=12)) + "\n")
        elif kind == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "dedent":
            lines[i] = lines[i].lstrip(" ")
        else:
            lines[i] = "  " + lines[i]
    load_with("".join(lines))


def test_unchanged_lesson_loads():
    assert load_with(ORIGINAL) is None
