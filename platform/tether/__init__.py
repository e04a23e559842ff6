"""Tether: relationship-scoped long-term memory for AI chat."""

import os
from importlib.metadata import PackageNotFoundError, version

# Ranking is many small numpy operations per request: BLAS thread pools only add
# contention and tail latency next to the event loop and the other processes. This
# must happen before numpy is first imported, hence here; an explicit setting wins.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

try:
    __version__ = version("tether")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
