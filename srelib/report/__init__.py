"""The run report: one self-contained HTML file of a run (``srelib report RUN --html FILE``).

It holds the run's provenance and verification result, its score distributions, the per-task
table with CIs, the localisation columns, and every episode, browsable record by record with
the panes the trajectory viewer draws. No server and no network: the CSS, the script and the
plots are inline, and the episodes are embedded compressed and opened on demand.

A front end over the others: it composes the plots and the widgets' HTML panes, and only the
command line imports it.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {"write_html": "srelib.report.page", "Report": "srelib.report.page"}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports("srelib.report", _EXPORTS, globals())
