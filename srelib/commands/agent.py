"""``srelib agent``: train the small agent, print where it is saved, and measure it on held-out
seeds."""

from __future__ import annotations




def cmd_agent_train(args) -> int:
    """``srelib agent train``: train the small agent and save it (unless
    ``--if-missing`` finds it)."""
    from srelib.training.agent import train_agent

    options = {"tools": not args.text}
    if args.epochs is not None:
        options["epochs"] = args.epochs
    if args.seeds is not None:
        options["seeds"] = range(args.seeds) if isinstance(args.seeds, int) else args.seeds
    if args.if_missing:
        from srelib.training.agent import default_agent_dir, find_agent

        saved = find_agent(args.out or default_agent_dir(**options))
        if saved:
            print(f"The agent is already saved in {saved}.")
            return 0
    train_agent(args.out, **options)
    return 0


def cmd_agent_path(args) -> int:
    """``srelib agent path``: print the folder ``agent train`` saves to."""
    from srelib.training.agent import default_agent_dir

    print(default_agent_dir())
    return 0


def cmd_agent_measure(args) -> int:
    """``srelib agent measure``: parse-failure and invalid-action rates and scores
    on held-out seeds."""
    from srelib.analysis.stats import to_markdown
    from srelib.training.agent import (HELD_OUT_SEEDS, agent_policy, default_agent_dir,
                                       find_agent, measure_agent)

    folder = find_agent(args.folder)
    if folder is None:
        raise ValueError(f"no saved agent in {args.folder or default_agent_dir()}; "
                         "run 'srelib agent train' first")
    seeds = (range(HELD_OUT_SEEDS[0], HELD_OUT_SEEDS[0] + args.seeds)
             if isinstance(args.seeds, int) else args.seeds)
    result = measure_agent(agent_policy(folder), seeds=seeds, pools=args.pools)
    print(f"parse-failure rate: {result['parse_failure_rate']:.3f} of the agent's steps; "
          f"invalid actions: {result['invalid_action_rate']:.3f}")
    print(to_markdown(result["scores"], index=False))
    return 0
