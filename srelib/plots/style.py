"""How every plot looks: the Okabe-Ito palette (distinguishable under the common colour-vision
deficiencies), the colour each policy keeps in every plot, the colours of patch outcomes, and
the held-out note."""

from __future__ import annotations

from typing import Sequence

#: Okabe & Ito (2008), ordered so that the first colours contrast best on white.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442",
             "#000000")
#: The colour each ``srelib eval`` policy (and each ceiling handoff) keeps in every plot.
POLICY_COLOURS = {"null": "#000000", "random": "#56B4E9", "oracle-random": "#CC79A7",
                  "oracle": "#CC79A7", "heuristic": "#E69F00", "revert": "#F0E442",
                  "heuristic-revert": "#D55E00", "reference": "#009E73"}
#: Resolved outcomes of a proposed patch (SWE-bench's meaning), best first, and their colours.
RESOLVED = {"full": "#009E73", "partial": "#E69F00", "no": "#D55E00", "no patch": "#BBBBBB"}
HELD_OUT_NOTE = "h/ = held-out task, pool D"


def colour(index: int) -> str:
    """The ``index``-th palette colour (cycling).

    Args:
        index: Any integer.

    Returns:
        A hex colour.
    """
    return OKABE_ITO[index % len(OKABE_ITO)]


def policy_colours(policies: Sequence[str]) -> dict[str, str]:
    """One distinct colour per policy: a known name keeps its own (:data:`POLICY_COLOURS`),
    other names take the palette colours no policy of this plot uses, in order. Colours
    repeat only past eight policies.

    Args:
        policies: The policies of one plot.

    Returns:
        ``{policy: hex colour}``.
    """
    taken = {}
    for name in policies:
        fixed = POLICY_COLOURS.get(name)
        if fixed is not None and fixed not in taken.values():
            taken[name] = fixed
    free = [c for c in OKABE_ITO if c not in taken.values()] or list(OKABE_ITO)
    others = [n for n in policies if n not in taken]
    taken.update({name: free[i % len(free)] for i, name in enumerate(others)})
    return {name: taken[name] for name in policies}
