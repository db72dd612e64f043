"""Episodes as training data: one row per agent turn, for SFT and RL.

A stored episode keeps its actions, not the observations the agent saw; :func:`turn_rows`
replays the actions through the seeded environment to recover each observation, renders it as
the chat policies do (:class:`srelib.policies.llm.prompts.Transcript`: system prompt, incident,
rolling history) and pairs it with the action taken, written as the JSON the parser reads.

Each row: ``policy, task, pool, mode, seed, phase, step``; ``prompt``, the chat messages the
policy saw before acting, and ``completion``, the assistant turn that answers with the action
(TRL's conversational prompt-completion format; with ``tool_turns=True`` a ``tool_calls``
message, as in the GRPO rollouts); ``action``, the action as a JSON string (one
schema for every row); ``valid``; ``reward``, the step's; ``score``, the episode's final;
``localisation``, the episode's localisation columns (:mod:`srelib.results.localisation`, analysis
only: never a reward).
:func:`to_dataset` makes a Hugging Face ``datasets.Dataset`` of them, with each tool call's
arguments as JSON text (OpenAI's form, which the tool chat format renders the same): Arrow would
otherwise merge every call's arguments into one struct and give each call the others' fields
as nulls. :func:`write_jsonl` and :func:`read_jsonl` keep them as JSON lines.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Iterator

from srelib.extras import require
from srelib.results.store import KEY_COLUMNS

ROW_FIELDS = (*KEY_COLUMNS, "phase", "step", "prompt", "completion", "action", "valid", "reward",
              "score", "localisation")


def action_text(action: dict) -> str:
    """The action as the JSON object a model should answer with."""
    return json.dumps({"action_type": action.get("action_type"),
                       "target_service": action.get("target_service"),
                       "parameters": action.get("parameters") or {}}, sort_keys=True)


def turn_rows(episodes: Iterable[Any], **transcript_options: Any) -> Iterator[dict]:
    """One row per agent turn of every episode (see the module doc). ``transcript_options`` go
    to :class:`~srelib.policies.llm.prompts.Transcript` (``max_history``, ``obs_chars``, ...).
    Raises ValueError if an episode does not replay to its own records and score
    (:func:`srelib.verify_episode`, whose replay also gives the observations)."""
    from srelib.policies.llm.prompts import Transcript
    from srelib.results.verify import verify_episode

    for episode in episodes:
        check = verify_episode(episode)
        if not check:
            raise ValueError(f"{episode!r} does not replay: {'; '.join(check.problems)}")
        transcript = Transcript(**transcript_options)
        located = episode.localisation()
        seen = check.first_observation
        for record, after in zip(episode.steps, check.observations):
            if int(record.get("step") or 0) > 0:  # pool B's automatic handoff: no agent turn
                assert seen is not None, "an episode that replays has its observations"
                transcript.add_observation(seen)
                prompt = transcript.messages()
                text = action_text(record.get("action") or {})
                transcript.add_reply(text)
                yield {"policy": episode.policy, "task": episode.task, "pool": episode.pool,
                       "mode": episode.mode, "seed": episode.seed, "phase": record.get("phase"),
                       "step": record.get("step"), "prompt": prompt,
                       "completion": [transcript.turns[-1] if transcript.tool_turns
                                      else {"role": "assistant", "content": text}],
                       "action": text,
                       "valid": bool(record.get("valid")), "reward": float(record["reward"]),
                       "score": episode.final, "localisation": dict(located)}
            seen = after


def to_dataset(episodes: Iterable[Any], **transcript_options):
    """A ``datasets.Dataset`` with one row per agent turn (needs the ``train`` extra)."""
    Dataset = require("datasets", "to_dataset").Dataset
    from srelib.policies.llm.prompts import arguments_as_text

    rows = [{**row, "prompt": arguments_as_text(row["prompt"]),
             "completion": arguments_as_text(row["completion"])}
            for row in turn_rows(episodes, **transcript_options)]
    return Dataset.from_list(rows) if rows else Dataset.from_dict({f: [] for f in ROW_FIELDS})


def write_jsonl(episodes: Iterable[Any], path: str | os.PathLike, **transcript_options) -> int:
    """Write one JSON line per agent turn; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for row in turn_rows(episodes, **transcript_options):
            fh.write(json.dumps(row, sort_keys=True) + "\n")
            count += 1
    return count


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The rows :func:`write_jsonl` wrote."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
