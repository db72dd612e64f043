"""Build the notebooks from their percent-format sources and execute them in place.

    python tools/build_notebooks.py            # build and execute every notebook
    python tools/build_notebooks.py 02 03      # only those whose name starts with 02 or 03

A source `notebooks/src/NN_name.py` holds cells separated by `# %%` lines; `# %% [markdown]`
starts a markdown cell (its lines lose their leading "# "), and `# %% tags=["parameters"]`
tags a code cell. `# %% install REQUIREMENT...` becomes the install cell: on Colab only, it
pip-installs srelib with the extras the requirement names (e.g. `srelib[llm]`) and any other
requirements, from the repository, a wheel or a folder (see `install_cell`).

The repository is set in one place, `[project.urls] Repository` in pyproject.toml: the build
stamps it into every notebook's Colab badge and install cell, and into the README's Colab
links. Outputs are stored executed, as nbval compares them, and each notebook's metadata says
which machine class made them (``srelib.made_by``: CPU kernel level, torch, transformers).
`make outputs` runs this and remakes ``results/`` too.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from srelib.results.provenance import machine_class

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
README = ROOT / "README.md"
COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/main/")
INSTALL_CELL = """\
# On Colab, install srelib; anywhere else, use the srelib of this environment.
# SRELIB_SOURCE: this repository, a fork's git URL, a wheel or a folder (README: "Colab").
import subprocess
import sys

SRELIB_SOURCE = "git+{repository}"
if "google.colab" in sys.modules:
    if SRELIB_SOURCE.startswith("/content/drive/"):
        from google.colab import drive

        drive.mount("/content/drive")
    from_url = SRELIB_SOURCE.startswith(("git+", "http"))
    wanted = f"srelib{extras} @ {{SRELIB_SOURCE}}" if from_url else f"{{SRELIB_SOURCE}}{extras}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", wanted{others}],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        reason = (pip.stderr.strip() or pip.stdout.strip() or "no output").splitlines()[-1]
        raise SystemExit(f"Could not install {{wanted}} ({{reason}}); "
                         "a private repository needs a wheel or a Drive copy: README, Colab.")
else:
    print("Not on Colab: using the srelib installed in this environment.")"""


def repository() -> str:
    """The project's repository URL: ``[project.urls] Repository`` in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    url = project.get("urls", {}).get("Repository", "").rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise ValueError("pyproject.toml [project.urls] Repository must be https://github.com/"
                         f"OWNER/NAME (Colab opens notebooks from GitHub); got {url!r}")
    return url


def colab_prefix(repo_url: str) -> str:
    """``https://colab.research.google.com/github/OWNER/NAME/blob/main/``."""
    return repo_url.replace("https://github.com/",
                            "https://colab.research.google.com/github/") + "/blob/main/"


def badge(name: str, repo_url: str) -> str:
    url = f"{colab_prefix(repo_url)}notebooks/{name}.ipynb"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def install_cell(requirements: list[str], repo_url: str) -> str:
    """The install cell for ``srelib[EXTRAS]`` plus other requirements (Colab only).

    A failed pip install ends the cell with a one-line message, not a traceback.
    """
    extras = next((r[len("srelib"):] for r in requirements
                   if re.fullmatch(r"srelib(\[[\w,]+\])?", r)), None)
    if extras is None:
        raise ValueError(f"an install cell names srelib or srelib[EXTRAS]; got {requirements}")
    others = "".join(f", {json.dumps(r)}" for r in requirements if not r.startswith("srelib"))
    return INSTALL_CELL.format(repository=repo_url, extras=extras, others=others)


def parse_cells(text: str, repo_url: str) -> list:
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
            if header.startswith("install "):
                lines = install_cell(header.split()[1:], repo_url).splitlines()
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def build(src: Path, repo_url: str) -> Path:
    name = src.stem
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(badge(name, repo_url))] + \
        parse_cells(src.read_text(), repo_url)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(OUT)}}).execute()
    nb.metadata["srelib"] = {"made_by": machine_class()}  # which machine class made the outputs
    for cell in nb.cells:  # stable ids keep diffs small
        cell.pop("id", None)
        cell.metadata.pop("execution", None)
    nb.nbformat_minor = 4
    path = OUT / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def stamp_readme(repo_url: str) -> None:
    """Point the README's Colab links at ``repo_url``."""
    text = README.read_text()
    stamped = COLAB_LINK.sub(colab_prefix(repo_url), text)
    if stamped != text:
        README.write_text(stamped)


def main(prefixes: list[str]) -> None:
    repo_url = repository()
    stamp_readme(repo_url)
    for src in sorted(SRC.glob("*.py")):
        if not prefixes or any(src.stem.startswith(p) for p in prefixes):
            print("built", build(src, repo_url).relative_to(ROOT), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
