"""Import cost: ``import srelib`` in a fresh interpreter, and which heavy modules it loads.

Each repeat starts a new ``python`` process that times ``import srelib`` alone (interpreter
start-up excluded) and lists the heavy libraries present in ``sys.modules`` afterwards. It also
times reaching the environment class (``srelib.IncidentEnv``), which imports ``srelib.env``.

    python bench/bench_import.py --repeats 15
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO_ROOT, Row, base_parser, median, report  # noqa: E402

TARGET_S = 0.3
HEAVY_MODULES = ("torch", "transformers", "openai", "matplotlib", "ipywidgets", "pandas",
                 "numpy", "IPython", "httpx", "tqdm")
_PROBE = """
import json, sys, time
start = time.perf_counter()
import srelib
imported = time.perf_counter() - start
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
start = time.perf_counter()
srelib.IncidentEnv
env = time.perf_counter() - start
print(json.dumps({{"import_s": imported, "env_s": env, "heavy": heavy}}))
"""


def probe() -> dict:
    """One fresh interpreter's timings and heavy-module list."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY_MODULES)],
                         capture_output=True, text=True, cwd=REPO_ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"the import probe failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(repeats: int) -> list[Row]:
    probes = [probe() for _ in range(repeats)]
    imported = median(p["import_s"] for p in probes)
    heavy = sorted({m for p in probes for m in p["heavy"]})
    return [
        Row("import", "import srelib median", imported, "s", f"<= {TARGET_S:g} s",
            imported <= TARGET_S, f"{repeats} fresh processes"),
        Row("import", "heavy modules loaded", ", ".join(heavy) or "none", "", "none", not heavy,
            "checked: " + ", ".join(HEAVY_MODULES)),
        Row("import", "then srelib.IncidentEnv median", median(p["env_s"] for p in probes), "s"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="fresh interpreters to time")
    args = parser.parse_args(argv)
    rows = run(args.repeats)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
