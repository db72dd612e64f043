"""Cheaters: policies that try to score without solving the incident, kept to prove they fail.

Each module registers the gate rule of each of its policies
(:func:`srelib.analysis.gate.register`); the validity gate and suite admission find them through
:func:`srelib.analysis.gate.rules`, which reads every module of this folder. Nothing else in
srelib imports this package: the tests do. ``blunt``: scripted shortcuts that ignore or barely
read the incident; ``cunning``: ones that read the surface, the reward or the train split;
``hijack``: patches that attack the test runner; ``guessing``: declarations that guess (the red
team's, not in the gate).
"""
