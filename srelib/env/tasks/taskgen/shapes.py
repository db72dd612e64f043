"""What a bug shape is, and how one is filled in; the shapes themselves are the modules of
:mod:`.shape_lib`, one per shape.

A bug shape is a small working component, a feature, and the bug a feature commit slips in.

A shape is written once with the placeholders ``@N@`` (a noun, CamelCase), ``@n@`` (snake case),
``@ns@`` (plural) and ``@pkg@`` (the service's package), and instantiated for a service's nouns.
It holds three versions of one module: ``source`` (the working component an innocent commit
adds), ``good`` (``source`` plus a feature) and the bug, a list of ``(old, new)`` replacements
that turn ``good`` into the bad commit's version. The reference fix is the inverse of the bug:
``good``, feature kept. ``probes`` and ``checks`` are the hidden tests (layout in
docs/CONTRACTS.md): they exercise the base behaviour and the feature (which a blind revert
loses) and the behaviour the bug breaks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """One component and the bug a feature commit carries into it (see the module doc)."""

    name: str
    family: str
    module: str  # path under the package (or "common/...": a vendored shared library)
    what: str  # what the component does, for commit messages
    feature: str  # what the feature adds, for commit messages and deploy notes
    source: str
    good: str
    bug: tuple  # ((old, new), ...) applied to ``good``
    tests: str  # visible tests of ``source`` (the innocent commit)
    feature_tests: str  # visible tests the feature commit appends
    probes: str
    checks: str

    def bad(self) -> str:
        """``good`` with the bug injected; each replacement must match exactly once."""
        text = self.good
        for old, new in self.bug:
            if text.count(old) != 1:
                raise ValueError(f"shape {self.name}: bug anchor must occur once: {old!r}")
            text = text.replace(old, new)
        return text


def fill(text: str, noun: str, plural: str, pkg: str) -> str:
    """Instantiate a template for one noun (``quote``/``quotes``) and package."""
    camel = "".join(part.capitalize() for part in noun.split("_"))
    return (text.replace("@N@", camel).replace("@ns@", plural).replace("@n@", noun)
            .replace("@pkg@", pkg))
