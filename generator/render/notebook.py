"""Build lesson.ipynb from the cells of the rendered lesson, with nbformat.

The notebook is made as plain data and validated whole, once (once per shape: validate_notebook), against
the nbformat 4 schema (nbformat.v4.new_*_cell validates every cell again on its own through
jsonschema, about 0.6 ms a cell, without checking anything more), then written as nbformat's own
writer writes it: sorted keys, an indent of one, each source split into lines. Its writer first
deep-copies the notebook it is given; this one is made for the writing and dropped after it.
"""

from __future__ import annotations

import json

import nbformat
from nbformat import v4

from generator.files import memo
from generator.content.markdown import Cell

PART_KEY = (
    "coursepack"  # cell metadata {"coursepack": {"part": ID}}: the answer place of rubric part ID
)


def _cell(cell: Cell, index: int) -> dict:
    cell_id = f"c{index:02d}-{cell.role or cell.kind}"  # fixed ids keep the file deterministic
    if cell.kind == "code":
        return {
            "cell_type": "code",
            "id": cell_id,
            "metadata": {"tags": [cell.role]},
            "source": cell.source,
            "outputs": [],
            "execution_count": None,
        }
    if (
        cell.role == "answer"
    ):  # an answer place: its rubric part in the metadata, as nbgrader's grade_id
        return {
            "cell_type": "markdown",
            "id": f"{cell_id}-{cell.part}",
            "metadata": {PART_KEY: {"part": cell.part}},
            "source": cell.source,
        }
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": cell.source}


def _write(notebook: dict) -> bytes:
    validate_notebook(notebook)
    for cell in notebook["cells"]:
        cell["source"] = cell["source"].splitlines(True)  # nbformat's split_lines
    text = json.dumps(
        notebook, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False
    )
    return (text + "\n").encode()


def validate_notebook(notebook: dict) -> None:
    """nbformat.validate(notebook), once per shape: the schema takes any string as a cell's source,
    so a notebook is valid exactly when the same with its sources emptied is. A pack's notebooks
    (rendered early and final, alone and in its course bundle) have one shape."""
    shape = json.dumps(
        {
            **notebook,
            "cells": [
                {**cell, "source": ""} if isinstance(cell["source"], str) else cell
                for cell in notebook["cells"]
            ],
        },
        sort_keys=True,
    )
    valid = memo.table("notebook.valid")  # the shapes of notebooks validated so far in this build
    if shape not in valid:
        nbformat.validate(notebook)
        valid[shape] = True


def build_notebook(cells: list[Cell], language: str, title: str) -> bytes:
    return _write(
        {
            "cells": [_cell(cell, index) for index, cell in enumerate(cells)],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python"},
                "title": title,
                "language": language,
            },
            "nbformat": v4.nbformat,
            "nbformat_minor": v4.nbformat_minor,
        }
    )
