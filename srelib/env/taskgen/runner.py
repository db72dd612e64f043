"""Run generated hidden tests on many trees in one subprocess, to derive FAIL_TO_PASS / PASS_TO_PASS.

The generator's own code is trusted, so the trees it builds (the bad tree and the fixed tree of
each candidate) are observed in one plain ``python -I -S -B`` child per batch, imported from
memory, instead of one sandbox per tree on disk; the probes' observations are recorded as the
sandbox runner records them (plain JSON: return value, raised type, printed text) and judged
by the checks here, as :mod:`srelib.env.verdicts` judges them. Agents' patches are still
graded in the sandbox.
"""

from __future__ import annotations

import json
import random
import subprocess

from srelib.env.sandbox import python
from srelib.env.verdicts import Observation, decode_record

_CHILD = r'''
import contextlib, importlib.abc, importlib.util, io, json, random, sys


class Tree(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the modules of one tree from memory, ahead of everything else on the path."""

    def __init__(self, files):
        self.files, self.loaded = files, []

    def _path(self, name):
        rel = name.replace(".", "/")
        for path in (rel + "/__init__.py", rel + ".py"):
            if path in self.files:
                return path
        return None

    def find_spec(self, name, path=None, target=None):
        found = self._path(name)
        if found is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=found.endswith("__init__.py"))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path = self._path(module.__name__)
        module.__file__ = "/repo/" + path
        self.loaded.append(module.__name__)
        exec(compile(self.files[path], module.__file__, "exec"), module.__dict__)


results = []
for n, job in enumerate(json.loads(sys.stdin.readline())):
    tree = Tree(job["tree"])
    sys.meta_path.insert(0, tree)
    seen = {}
    for file, text in sorted(job["probes"].items()):
        module = type(sys)(f"probes_{n}_{file[:-3]}")
        try:
            exec(compile(text, file, "exec"), module.__dict__)
        except BaseException:
            continue
        for name, probe in sorted(vars(module).items()):
            if not (name.startswith("probe_") and callable(probe) and probe.__module__ == module.__name__):
                continue
            printed, value, raised = io.StringIO(), None, None
            test_id = f"{file}::test_{name[len('probe_'):]}"
            args = (random.Random(f"{job['seed']}:{test_id}"),) if probe.__code__.co_argcount else ()
            try:
                with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                    value = probe(*args)
            except BaseException as exc:
                raised = {"type": type(exc).__name__, "message": str(exc)[:4000]}
            try:
                json.dumps(value)
            except (TypeError, ValueError, RecursionError) as exc:
                value, raised = None, {"type": "UnobservableValue", "message": str(exc)[:300]}
            seen[test_id] = json.dumps({"id": test_id, "value": value, "raised": raised,
                                        "printed": printed.getvalue()[:4000]})
    sys.meta_path.remove(tree)
    for name in tree.loaded:
        sys.modules.pop(name, None)
    results.append(seen)
sys.stdout.write(json.dumps(results))
'''


def observe_many(jobs: list[tuple[dict[str, str], dict[str, str]]], timeout_s: float = 120.0,
                 seed: int = 0) -> list[dict[str, Observation]]:
    """For each ``(tree, probe files)``: ``{test id: Observation}`` of running the probes, those
    that draw inputs drawing them from ``seed`` as the sandbox runner does."""
    specs = [{"tree": tree, "probes": probes, "seed": seed} for tree, probes in jobs]
    run = subprocess.run([python(), "-I", "-S", "-B", "-c", _CHILD], capture_output=True,
                         input=(json.dumps(specs) + "\n").encode(), timeout=timeout_s)
    if run.returncode != 0:
        raise RuntimeError(f"hidden-test runner failed: {run.stderr.decode(errors='replace')[-500:]}")
    out = []
    for seen in json.loads(run.stdout):
        decoded = (decode_record(payload) for payload in seen.values())
        out.append({test_id: obs for test_id, obs in filter(None, decoded)})
    return out


def judge(checks: dict[str, str], observations: dict[str, Observation], seed: int = 0) -> dict[str, bool]:
    """``{test id: passed}`` for every check in ``checks`` ({file: text}) on ``observations``
    (a check that takes two arguments redraws its probe's inputs from ``seed``)."""
    passed = {}
    for file, text in sorted(checks.items()):
        namespace: dict = {"__name__": f"srelib_taskgen_checks.{file[:-3]}"}
        exec(compile(text, f"<generated checks {file}>", "exec"), namespace)
        for name, check in sorted(namespace.items()):
            if not (name.startswith("test_") and callable(check)):
                continue
            test_id = f"{file}::{name}"
            seen = observations.get(test_id)
            args = (random.Random(f"{seed}:{test_id}"),) if check.__code__.co_argcount > 1 else ()
            try:
                ok = seen is not None and check(seen, *args) is None
            except Exception:
                ok = False
            passed[test_id] = ok
    return passed
