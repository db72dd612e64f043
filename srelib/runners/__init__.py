"""Runners: episodes driven by policies. One episode or a grid (:mod:`.rollout`: run_episode and
evaluate), lockstep batches for batch policies (:mod:`.lockstep`), worker processes
(:mod:`.workers`), executors and the portable form policies travel in (:mod:`.executors`), and
the token accounting of model calls (:mod:`.usage`)."""
