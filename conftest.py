"""Settings for every pytest run in this repository: the tests' and the notebooks' (nbval).

`make test` runs two test processes on two cores. Torch would give each process one OpenMP
thread per core, and the four threads' spin-waits on two cores make two tiny-model trainings at
once 12x slower (`python bench/bench_threads.py --repeats 2`: 125 s against 10 s on the 2-core
machine); one thread per process keeps both cores busy without that. The setting reaches the processes the tests start (notebook kernels, `transformers
serve`, bench scripts) through the environment; a value set by the caller is kept.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
