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

from contextlib import contextmanager


@contextmanager
def labelled_positions_only():
    """Within the block, TRL's fused LM head on a CPU projects only the labelled positions."""
    import trl.trainer.utils as trl_utils

    compact_on = getattr(trl_utils, "_use_triton", None)  # TRL's "score labelled positions only"
    if compact_on is None:
        yield
        return
    trl_utils._use_triton = lambda device: device.type == "cpu" or compact_on(device)
    try:
        yield
    finally:
        trl_utils._use_triton = compact_on
