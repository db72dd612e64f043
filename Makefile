# srelib: the two commands a user needs are `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the scripted demo needs no model libraries: srelib with matplotlib, pandas and tqdm
DEMO_STAMP := $(VENV)/.demo-installed
# torch is pinned here, in the same pip command as transformers, so pip takes the local CPU
# wheel; the package itself never pins torch (Colab and Runpod bring their own). --no-compile:
# Python compiles what the tests import when they import it, not every file of every package.
TEST_PINS := torch==2.13.0 transformers==5.24.0
# the docstring linter (tests/test_docstring_lint.py) lives in a folder of its own: its
# docstring_parser is a fork that installs under the name of the docstring_parser inspect_ai
# needs, and in one environment whichever pip writes last wins
LINTER_HOME := $(VENV)/pydoclint
LINTER_PIN := "pydoclint>=0.12,<0.13"

.PHONY: setup test test-fast test-gpu-paths test-bench test-cpus check-wheel docs demo lab bench clean agent outputs

$(STAMP): pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --no-compile $(TEST_PINS) -e ".[llm,hf,notebooks,dev,docs]"
	$(BIN)/pip install -q --no-compile --target $(LINTER_HOME) $(LINTER_PIN)
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[demo]"
	touch $(DEMO_STAMP)

setup: $(STAMP)

# the small agent SFT makes from the scripted policies, which notebooks 04, 05 and 07 use: its
# folder is keyed by what made it (srelib's files, torch and transformers, the CPU kernel
# level), so it is trained again after any change and never taken from another checkout
agent: $(STAMP)
	$(BIN)/python -m srelib agent train --if-missing

# the tests run on two processes (pytest-xdist), and so do the notebooks, each one whole on one
test: $(STAMP) agent
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not gpu_path and not bench_script and not cluster" tests
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --nbval --nbval-sanitize-with notebooks/sanitize.cfg notebooks

# the GPU paths run tiny on the CPU (bench/gpu_gemma.py, bench/gpu_train.py, notebook 07's GPU
# branch): two minutes of checks for the day a GPU is lent; .ci/run runs them after make test
test-gpu-paths: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m gpu_path tests

# the benchmark scripts of bench/ run end to end at small sizes, and the sweeps on a real Dask
# and Ray cluster (a minute or two): .ci/run runs them after make test, whose ten minutes they
# do not fit in
test-bench: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "(bench_script or cluster) and not gpu_path" tests

# while developing: every test but those marked slow (tests/conftest.py), no notebooks
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow" tests

# the wheel and sdist built, checked by twine, and installed into two fresh virtual
# environments (the demo extra alone; the notebook extras) that run the demo, an evaluate, a
# report, a graded patch and notebooks 01 and 05 from site-packages (.ci/run runs it)
check-wheel: $(STAMP)
	$(BIN)/python tools/check_wheel.py

# the documentation site into site/, warnings as errors (mkdocs.yml; the docs extra)
docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict

demo: $(DEMO_STAMP)
	$(BIN)/python -m srelib demo --out results

# notebooks 04, 05 and 07 under a lower CPU kernel level, with the agent trained there, and a
# changed scripted number caught by nbval (.ci/run runs it after make test)
test-cpus: $(STAMP) agent
	$(BIN)/python tools/check_other_cpu.py

# remake every committed output (the executed notebooks and results/) on this machine class
outputs: $(STAMP) agent
	$(BIN)/python tools/remake_outputs.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks

# every CPU benchmark side by side; writes bench/results.md and the benchmark table of
# docs/benchmarks.md.
# REFERENCE=/path/holding/incident_env adds the comparison with the reference system.
REFERENCE ?=
bench: $(STAMP)
	$(BIN)/python bench/run_all.py --settle 60 $(if $(REFERENCE),--reference $(REFERENCE)) --results bench/results.md --table docs/benchmarks.md

clean:
	rm -rf $(VENV) results runs .pytest_cache site .cache
