"""The report page: the summary sections, the episode index and the packed episodes in one
HTML file, with the stylesheet and the script of this folder inline."""

from __future__ import annotations

import functools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srelib._version import __version__
from srelib.env.tasks.ids import public_name
from srelib.report.episodes import packed_chunks
from srelib.report.sections import localisation_table, plots, provenance, task_table, verification
from srelib.widgets.markup import plain, style_tag

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Report:
    """What :func:`write_html` wrote: the file, its size, the episodes it holds and the
    replay's problems (None when the run was not verified)."""

    path: Path
    bytes: int
    episodes: int
    problems: tuple[str, ...] | None


def write_html(run: str | os.PathLike, path: str | os.PathLike, *, verify: bool = True,
               workers: int = 1) -> Report:
    """Write a run as one self-contained HTML file (no server, no network).

    Args:
        run: a run directory written by :func:`srelib.evaluate` (or its ``episodes.jsonl``).
        path: the HTML file to write (replaced whole, so a failure leaves the old one).
        verify: replay every episode (the verification section, and each record's result in
            the episode pages); False shows the records as stored, without results.
        workers: processes that replay the episodes (1: this one).

    Returns:
        A :class:`Report` with the file's size and the run's problems.

    Raises:
        ValueError: the run holds no episodes.
        OSError: the run cannot be read or the file cannot be written.
    """
    from srelib.results.store import frame_from_episodes, load_config, load_episodes, run_directory
    folder = run_directory(run)
    episodes = load_episodes(run)
    if not episodes:
        raise ValueError(f"{run} holds no episodes yet")
    problems, checks = _replayed(folder, episodes, workers) if verify else (None, {})
    frame = frame_from_episodes(episodes)
    manifest = load_config(folder)
    records = [e.to_dict() for e in episodes]
    keys = [e.key for e in episodes]
    chunks, places = packed_chunks(records, checks, keys)
    index = [_index_row(record, checks.get(key), place)
             for record, key, place in zip(records, keys, places)]
    summary = "".join([provenance(manifest, len(episodes)),
                       verification(problems, len(episodes)), plots(frame),
                       task_table(frame), localisation_table(frame)])
    page = _page(f"srelib run report: {folder.name}", summary,
                 {"episodes": index, "chunks": chunks})
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return Report(target, target.stat().st_size, len(episodes),
                  None if problems is None else tuple(problems))


def _replayed(folder: Path, episodes: list, workers: int) -> tuple[list[str], dict]:
    """:func:`srelib.results.verify.check_run` over ``workers`` processes, scripted policies
    re-run (:func:`srelib.runners.rerun.rerun_findings`): the problems and each replay."""
    from srelib.results.verify import check_run
    from srelib.runners.rerun import rerun_findings

    if workers <= 1:
        verdict, checks = check_run(folder, episodes, rerun=rerun_findings)
    else:
        with ProcessPoolExecutor(workers) as pool:
            verdict, checks = check_run(folder, episodes, rerun=rerun_findings,
                                        mapper=functools.partial(pool.map, chunksize=8))
    return list(verdict.problems), checks


def _index_row(record: dict, check: Any, place: tuple[int, int]) -> list:
    """One episode in the index: key, final score, resolved, replay verdict, records, and
    where it is packed (chunk, position)."""
    try:
        task = public_name(record["task"])
    except (ValueError, TypeError):
        task = record["task"]
    score = record.get("score") or {}
    return [record["policy"], task, record["pool"], record["mode"], record["seed"],
            score.get("final"), score.get("resolved"), None if check is None else check.ok,
            len(record.get("steps") or []), *place]


def _page(title: str, summary: str, data: dict) -> str:
    # "</" never appears inside the script's JSON (json.dumps escapes no slash, so we do)
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    css = (HERE / "report.css").read_text()
    script = (HERE / "report.js").read_text()
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"srelib {__version__}\">"
            f"<title>{plain(title)}</title>{style_tag()}<style>{css}</style></head>"
            f"<body><div class=\"srl srl-report\"><h1>{plain(title)}</h1>"
            "<nav><a href=\"#srl-summary\">Summary</a> \u00b7 <a href=\"#srl-episodes\">"
            "Episodes</a></nav>"
            f"<section id=\"srl-summary\">{summary}</section>"
            "<section id=\"srl-episodes\"><h2>Episodes</h2><div id=\"srl-filters\"></div>"
            "<div id=\"srl-list\"></div><div id=\"srl-viewer\"></div></section></div>"
            f"<script type=\"application/json\" id=\"srl-data\">{payload}</script>"
            f"<script>{script}</script></body></html>\n")
