"""On a CPU, let TRL's fused LM head project only the positions whose next token is learnt.

TRL's trainers (1.16) compute the loss with a fused LM head that skips the positions without a
label, but only on CUDA and XPU: elsewhere it projects every position, so that a compiled graph
keeps one shape on every batch (Neuron). A CPU compiles nothing, and in SFT on whole episodes
only the actions are learnt (6% of the agent's tokens), so projecting every position through
the LM head was most of the agent's training time. :func:`labelled_positions_only` makes a CPU
take TRL's own compact path, as CUDA does; the loss and its gradients are the same. With a TRL
that no longer has that test, training runs as TRL does it, only slower.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from srelib.extras import require

_lock = threading.Lock()
_holders = 0  # blocks open now, in any thread; the last one out restores TRL's test
_trl_test = None


@contextmanager
def labelled_positions_only():
    """Within the block, TRL's fused LM head on a CPU projects only the labelled positions.
    Blocks may nest or overlap across threads: TRL's own test is back once every one has
    closed."""
    global _holders, _trl_test
    require("trl", "srelib.training.labelled_positions")
    import trl.trainer.utils as trl_utils

    if getattr(trl_utils, "_use_triton", None) is None:  # TRL's "labelled positions only"
        yield
        return
    with _lock:
        if _holders == 0:
            _trl_test = compact_on = trl_utils._use_triton
            trl_utils._use_triton = lambda device: device.type == "cpu" or compact_on(device)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                trl_utils._use_triton = _trl_test
