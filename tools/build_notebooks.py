"""Build the notebooks from their percent-format sources and execute them in place.

    python tools/build_notebooks.py            # build and execute every notebook
    python tools/build_notebooks.py 02 03      # only those whose name starts with 02 or 03

A source `notebooks/src/NN_name.py` holds cells separated by `# %%` lines; `# %% [markdown]`
starts a markdown cell (its lines lose their leading "# "), and `# %% tags=["parameters"]`
tags a code cell. Every notebook gets a Colab badge as its first cell. Outputs are stored
executed, as nbval compares them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
REPO = "srelib/srelib"


def badge(name: str) -> str:
    url = f"https://colab.research.google.com/github/{REPO}/blob/main/notebooks/{name}.ipynb"
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})")


def parse_cells(text: str) -> list:
    cells, kind, tags, lines = [], None, [], []

    def flush():
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        elif kind == "code" and body.strip():
            cell = nbformat.v4.new_code_cell(body)
            if tags:
                cell.metadata["tags"] = tags
            cells.append(cell)

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            header = line[4:].strip()
            kind = "markdown" if header.startswith("[markdown]") else "code"
            tags = json.loads(header.split("=", 1)[1]) if header.startswith("tags=") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def build(src: Path) -> Path:
    name = src.stem
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(badge(name))] + parse_cells(src.read_text())
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(OUT)}}).execute()
    for cell in nb.cells:  # stable ids keep diffs small
        cell.pop("id", None)
        cell.metadata.pop("execution", None)
    nb.nbformat_minor = 4
    path = OUT / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def main(prefixes: list[str]) -> None:
    for src in sorted(SRC.glob("*.py")):
        if not prefixes or any(src.stem.startswith(p) for p in prefixes):
            print("built", build(src).relative_to(ROOT), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
