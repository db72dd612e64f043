"""Project-level promises: notebooks are committed executed, with a badge and parameters cell;
environment.yml and the Makefile install what pyproject declares."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))


def test_every_notebook_is_built_from_its_source_and_listed_in_the_readme():
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in SOURCES]
    assert len(NOTEBOOKS) >= 6
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in NOTEBOOKS if f"(notebooks/{p.name})" not in readme]
    assert not missing, f"the README's notebook table lacks {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_badge_parameters_and_stored_outputs(path):
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    assert "colab.research.google.com" in "".join(cells[0]["source"]) and cells[0]["cell_type"] == "markdown"
    code = [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert "parameters" in code[0]["metadata"].get("tags", []), "first code cell must be tagged parameters"
    install = "".join(code[1]["source"])
    assert "google.colab" in install, "second code cell installs srelib on Colab only"
    unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unrun, f"code cells {unrun} have no stored execution"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, "a stored output is an error"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "outputs must come from one top-to-bottom run"


def test_environment_yml_installs_the_package_extras():
    text = (ROOT / "environment.yml").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installed = re.search(r'-e "\.\[([a-z,]+)\]"', text).group(1).split(",")
    assert set(installed) == set(extras)
    assert "python=3.11" in text


def test_package_does_not_pin_torch():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + [d for ds in project["optional-dependencies"].values() for d in ds]
    assert not [d for d in deps if d.startswith("torch")]
    assert "torch==2.13.0 transformers==5.24.0" in (ROOT / "Makefile").read_text()


def _build_tool():
    spec = importlib.util.spec_from_file_location("build_notebooks",
                                                  ROOT / "tools" / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repository_is_named_once_and_stamped_everywhere():
    build = _build_tool()
    url = build.repository()
    assert url == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    links = build.COLAB_LINK.findall((ROOT / "README.md").read_text())
    assert len(links) >= len(NOTEBOOKS) and set(links) == {build.colab_prefix(url)}
    for source in (ROOT / "notebooks" / "src").glob("*.py"):
        assert "github.com" not in source.read_text(), f"{source.name} names a repository"
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        assert build.colab_prefix(url) + f"notebooks/{path.name}" in "".join(cells[0]["source"])
        code = [c for c in cells if c["cell_type"] == "code"]
        assert f"git+{url}" in "".join(code[1]["source"])


@pytest.mark.parametrize("name", ["04_llm_openai", "05_gemma_colab"])
def test_llm_notebooks_do_not_install_jupyterlab(name):
    build = _build_tool()
    cells = build.parse_cells((ROOT / "notebooks" / "src" / f"{name}.py").read_text(),
                              build.repository())
    install = [c.source for c in cells if c.cell_type == "code"][1]
    assert "notebooks" not in re.search(r"srelib(\[[\w,]*\])?", install.split("wanted =")[1])[0]
    assert "jupyterlab" not in install


def test_failed_colab_install_is_one_line(tmp_path, monkeypatch):
    build = _build_tool()
    url = build.repository()
    missing = tmp_path / "srelib-0.1.0-py3-none-any.whl"
    cell = build.install_cell(["srelib[llm]"], url).replace(f'"git+{url}"', f'"{missing}"')
    # a stand-in for the module only Colab has; pip itself runs for real (and fails: no wheel)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(SystemExit) as failure:
        exec(compile(cell, "install cell", "exec"), {})
    message = str(failure.value)
    assert "\n" not in message and str(missing) in message and "README" in message
