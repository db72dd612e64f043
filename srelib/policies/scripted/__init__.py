"""Scripted policies: the baselines, the heuristic SRE, revert, partial revert, the aimed repair
and the repair ladder, threshold stopping, and the reference (the answer key played out)."""
