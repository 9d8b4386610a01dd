"""The content loader under hypothesis: a located ContentError or success, never a traceback.

hypothesis is imported inside the tests: importing it takes 1.5 s, and every pytest-xdist process
collects this file while only one runs it."""

from pathlib import Path

import pytest

from generator.errors import ContentError
from generator.content.loader import load_content
from generator.skeleton import init_course
from tests.conftest import REPO, copy_course

TARGET = Path("lessons/lesson03_relu/text.en.yaml")
ORIGINAL = (REPO / "content" / TARGET).read_text(encoding="utf-8")
EXAMPLES = 40


def _loader(root: Path, target: Path):
    """load(text): the content under root with target replaced by text; the ContentError or None."""

    def load(text: str):
        (root / "content" / target).write_text(text, encoding="utf-8")
        try:
            load_content(root / "content")
        except ContentError as exc:
            for problem in exc.problems:
                assert problem.location.path and problem.message
            return exc
        return None

    return load


@pytest.fixture(scope="module")
def load_with(tmp_path_factory):
    """This repository's content, lesson 3's English text replaced."""
    root = tmp_path_factory.mktemp("fuzz")
    copy_course(REPO / "content", root / "content")
    return _loader(root, TARGET)


@pytest.fixture(scope="module")
def load_small(tmp_path_factory):
    """The one-lesson course of `coursepack init` (quicker to load), its English text replaced."""
    root = tmp_path_factory.mktemp("fuzz-small")
    init_course(root)
    return _loader(root, Path("lessons/lesson01_scale/text.en.yaml"))


def to_yaml(node, indent=0):
    pad = " " * indent
    if isinstance(node, dict):
        return "".join(
            f"{pad}{key}:\n{to_yaml(value, indent + 2)}"
            if isinstance(value, (dict, list))
            else f"{pad}{key}: {value}\n"
            for key, value in node.items()
        )
    if isinstance(node, list):
        return "".join(
            f"{pad}-\n{to_yaml(value, indent + 2)}"
            if isinstance(value, (dict, list))
            else f"{pad}- {value}\n"
            for value in node
        )
    return f"{pad}{node}\n"


def _settings():
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def test_random_documents(load_small):
    from hypothesis import given
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.text(max_size=20),
        st.integers(),
        st.booleans(),
        st.none(),
        st.sampled_from(
            ["no", "on", "1e3", "~", "null", "- x", ": y", "'q", '"', "&a", "*a", "!!int 3"]
        ),
    )
    documents = st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(
                st.sampled_from(["goal", "model", "what", "x", "hints", "q1"]), children, max_size=4
            ),
        ),
        max_leaves=12,
    )

    @_settings()
    @given(documents)
    def random_document(document):
        load_small(to_yaml(document))

    random_document()


def test_mutations_of_the_real_lesson(load_with):
    from hypothesis import given
    from hypothesis import strategies as st

    @_settings()
    @given(st.data())
    def mutation(data):
        lines = ORIGINAL.splitlines(keepends=True)
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(lines) - 1))
            kind = data.draw(
                st.sampled_from(["delete", "duplicate", "insert", "swap", "dedent", "indent"])
            )
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

    mutation()


def test_unchanged_lesson_loads(load_with):
    assert load_with(ORIGINAL) is None
