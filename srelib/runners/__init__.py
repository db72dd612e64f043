"""Runners: episodes driven by policies. One episode or a grid (:mod:`.rollout`: run_episode and
evaluate), lockstep batches for batch policies (:mod:`.lockstep`), worker processes
(:mod:`.workers`), executors and the portable form policies travel in (:mod:`.executors`), the
token accounting of model calls (:mod:`.usage`), a stored episode's scripted policy played again
(:mod:`.rerun`), and a run loaded and verified (:mod:`.runs`: ``load_run``, ``verify_run``)."""
