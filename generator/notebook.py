"""Build lesson.ipynb from the cells of the rendered lesson, with nbformat."""

from __future__ import annotations

import nbformat
from nbformat import v4

from generator.markdown import Cell


def build_notebook(cells: list[Cell], language: str, title: str) -> bytes:
    notebook = v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "title": title,
        "language": language,
    })
    for index, cell in enumerate(cells):
        cell_id = f"c{index:02d}-{cell.role or cell.kind}"   # fixed ids keep the file deterministic
        if cell.kind == "code":
            notebook.cells.append(v4.new_code_cell(cell.source, id=cell_id, metadata={"tags": [cell.role]}))
        else:
            notebook.cells.append(v4.new_markdown_cell(cell.source, id=cell_id))
    nbformat.validate(notebook)
    return (nbformat.writes(notebook) + "\n").encode()


def append_markdown_cell(data: bytes, source: str) -> bytes:
    notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
    notebook.cells.append(v4.new_markdown_cell(source.strip("\n"), id=f"c{len(notebook.cells):02d}-measured"))
    nbformat.validate(notebook)
    return (nbformat.writes(notebook) + "\n").encode()
