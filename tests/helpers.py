"""Helpers the tests and benchmarks share (not part of the package).

``load_seed_policies()`` loads the seed's ``policies.py`` (``../shared/seed`` beside the
checkout) with its three relative imports replaced by imports from srelib, as DESIGN.md says.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

#: The seed's policy module lives one folder above the checkout (``../shared/seed``).
SEED_POLICIES = Path(__file__).resolve().parents[2] / "shared" / "seed" / "policies.py"
_SEED_IMPORTS = (
    "from ..models import ActionType, BeliefState\n",
    "from ..pools import oracle_belief\n",
    "from ..tasks import get_scenario\n",
)
_SRELIB_IMPORT = "from srelib import ActionType, BeliefState, oracle_belief, get_scenario\n"


def load_seed_policies(path: str | os.PathLike = SEED_POLICIES) -> types.ModuleType:
    """The seed's policy module, its three relative imports pointed at srelib.

    It is registered as ``sys.modules["seed_policies"]`` so its policies pickle into worker
    processes. A file without the seed's imports raises ValueError.
    """
    text = Path(path).read_text()
    missing = [line for line in _SEED_IMPORTS if line not in text]
    if missing:
        raise ValueError(f"{path} does not have the seed's imports {missing!r}")
    text = text.replace(_SEED_IMPORTS[0], _SRELIB_IMPORT)
    for line in _SEED_IMPORTS[1:]:
        text = text.replace(line, "")
    module = types.ModuleType("seed_policies")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(text, str(path), "exec"), module.__dict__)  # noqa: S102 - the trusted seed file
    return module
