"""What the subcommands' options accept: seed lists, pools, epochs and bounded whole numbers
(each refusing a typo with a one-line reason), and output folders that can be written."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

#: Bounds on numeric options: past them a value is a typo, not a plan.
MAX_SEED_COUNT = 1_000_000
MAX_SEED = 2**63 - 1
MAX_EPOCHS = 1000.0
MAX_WORKERS = 256
MAX_STEPS = 100_000
MAX_SESSIONS = 10_000
MAX_IDLE_S = 7 * 24 * 3600


def output_dir(path: str | os.PathLike, what: str, create: bool = True) -> Path:
    """Check that the directory ``path`` can be written (and create it unless ``create`` is
    False); otherwise a ValueError names the path and the problem (``what`` names the option)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {path} is a file, not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ValueError(f"{what} {path} cannot be created: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        problem = "is not writable" if existing == path else \
            f"cannot be created: {existing} is not writable"
        raise ValueError(f"{what} {path} {problem}")
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{what} {path} cannot be created: {exc.strerror.lower()}") from None
    return path


def seeds_option(text: str):
    """``N`` (seeds 0..N-1, 1 <= N <= MAX_SEED_COUNT) or a comma list of seeds in [0, MAX_SEED]."""
    try:
        seeds = int(text) if "," not in text else [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be a count or a comma list, got {text!r}")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_SEED_COUNT:
        raise argparse.ArgumentTypeError(
            f"a seed count must be between 1 and {MAX_SEED_COUNT}, got {quoted(text)}")
    if isinstance(seeds, list) and (not seeds or min(seeds) < 0 or max(seeds) > MAX_SEED
                                    or len(seeds) > MAX_SEED_COUNT):
        raise argparse.ArgumentTypeError(
            f"a seed list holds 1 to {MAX_SEED_COUNT} seeds in [0, {MAX_SEED}], got {quoted(text)}")
    return seeds


def quoted(text: str) -> str:
    """``text`` quoted, cut to 40 characters for an error line."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def epochs_option(text: str) -> float:
    """A number of passes over the data, more than 0 and at most ``MAX_EPOCHS``."""
    try:
        epochs = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epochs must be a number, got {quoted(text)}") from None
    if not 0 < epochs <= MAX_EPOCHS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"epochs must be more than 0 and at most {MAX_EPOCHS:g}, "
                                         f"got {quoted(text)}")
    return epochs


def pools_option(text: str) -> list[str]:
    """An argparse type: a comma list of known pools."""
    from srelib.env.tasks.pools import POOLS

    pools = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in pools if p not in POOLS]
    if unknown or not pools:
        raise argparse.ArgumentTypeError(f"unknown pools {unknown or [text]}; "
                                         f"valid pools: {', '.join(POOLS)}")
    return pools


def whole_number(low: int, high: int):
    """An argparse type: a whole number in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high}, got {quoted(text)}")
        return value
    return parse


def proxies_option(text: str) -> str:
    """``--forwarded-allow-ips``: comma-separated IP addresses or networks, or ``*``; the text
    as uvicorn takes it."""
    import ipaddress

    items = [item.strip() for item in text.split(",")]
    for item in items:
        try:
            if item != "*":
                ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an IP address or network: {quoted(item)} "
                                             "(give addresses like 10.0.0.5 or 10.0.0.0/24, "
                                             "comma-separated, or *)") from None
    return ",".join(items)
