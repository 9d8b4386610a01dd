"""Build lesson.ipynb from the cells of the rendered lesson, with nbformat.

Cells are made as NotebookNodes and the whole notebook is validated once against the nbformat 4
schema: nbformat.v4.new_*_cell validates every cell again on its own through jsonschema (about
0.6 ms a cell, half of a pack's render time) without checking anything more.
"""

from __future__ import annotations

import nbformat
from nbformat import v4

from generator.markdown import Cell


def _cell(cell: Cell, index: int) -> nbformat.NotebookNode:
    cell_id = f"c{index:02d}-{cell.role or cell.kind}"   # fixed ids keep the file deterministic
    if cell.kind == "code":
        return nbformat.from_dict({"cell_type": "code", "id": cell_id, "metadata": {"tags": [cell.role]},
                                   "source": cell.source, "outputs": [], "execution_count": None})
    return nbformat.from_dict({"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": cell.source})


def _write(notebook: nbformat.NotebookNode) -> bytes:
    nbformat.validate(notebook)
    return (v4.writes(notebook) + "\n").encode()


def build_notebook(cells: list[Cell], language: str, title: str) -> bytes:
    notebook = v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "title": title,
        "language": language,
    })
    notebook.cells = [_cell(cell, index) for index, cell in enumerate(cells)]
    return _write(notebook)


def append_markdown_cell(data: bytes, source: str) -> bytes:
    notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
    notebook.cells.append(_cell(Cell("markdown", source.strip("\n"), "measured"), len(notebook.cells)))
    return _write(notebook)


def map_markdown(data: bytes, change) -> bytes:
    """The notebook with change(text) applied to every markdown cell's source."""
    notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
    before = [cell.source for cell in notebook.cells]
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = change(cell.source)
    if [cell.source for cell in notebook.cells] == before:
        return data
    return _write(notebook)
