"""Run generated hidden tests on many trees in one subprocess, to derive FAIL_TO_PASS / PASS_TO_PASS.

The generator's own code is trusted, so the trees it builds (the bad tree and the fixed tree of
each candidate) are observed in one plain ``python -I -S -B`` child per batch, imported from
memory, instead of one sandbox per tree on disk. The probes are observed by the code the sandbox
runner observes them with (the child's source starts with :mod:`srelib.env.grading.verdicts.observe`'s),
each probe file importing its tree afresh as it does in its own sandbox child, and judged by
:func:`srelib.env.grading.verdicts.rules.passes`, the grader's rule, so derivation and grading agree by
construction. Agents' patches are still graded in the sandbox.
"""

from __future__ import annotations

import json
import subprocess

from srelib.env.grading.verdicts.observe import PER_TEST_S, program
from srelib.env.grading.sandbox.isolate import python
from srelib.env.grading.verdicts.rules import Observation, checks_in, decode_record, passes

_CHILD = r'''
import importlib.abc, importlib.util, json, sys


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


install_alarm()
results = []
for job in json.loads(sys.stdin.readline()):
    seen = {}
    for file, text in sorted(job["probes"].items()):
        tree = Tree(job["tree"])  # each probe file imports the tree afresh, as in its own sandbox child
        sys.meta_path.insert(0, tree)
        module_name = "probes_" + file[:-3]
        try:
            with alarm(job["per_test_s"]):
                probes = load_probes(file, text, module_name)
        except BaseException:
            probes = []
        for test_id, probe in probes:
            observation = observe_timed(probe, probe_rng(job["seed"], test_id), job["per_test_s"])
            seen[test_id] = json.dumps({"id": test_id, **observation})
        sys.meta_path.remove(tree)
        for name in [*tree.loaded, module_name]:
            sys.modules.pop(name, None)
    results.append(seen)
sys.stdout.write(json.dumps(results))
'''


def observe_many(jobs: list[tuple[dict[str, str], dict[str, str]]], timeout_s: float = 120.0,
                 seed: int = 0) -> list[dict[str, Observation]]:
    """For each ``(tree, probe files)``: ``{test id: Observation}`` of running the probes, those
    that draw inputs drawing them from ``seed`` as the sandbox runner does."""
    specs = [{"tree": tree, "probes": probes, "seed": seed, "per_test_s": PER_TEST_S}
             for tree, probes in jobs]
    run = subprocess.run([python(), "-I", "-S", "-B", "-c", program(_CHILD)], capture_output=True,
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
        for name, check in sorted(checks_in("taskgen", file, text).items()):
            test_id = f"{file}::{name}"
            passed[test_id] = passes(check, test_id, observations.get(test_id), seed)
    return passed
