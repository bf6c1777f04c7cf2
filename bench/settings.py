"""The app's own settings, plus the Django floor's view (bench/urls.py); nothing else changes.

The bench's whole stack (uvicorn, its worker, migrations and the bench process) runs on this
module, so the floor view is served with exactly the app's middleware, sessions and database.
"""

from mrtrweb.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"

# MRTRWEB_BENCH_TRACEMALLOC=1: trace allocations from start-up (bench/heap.py).
from . import heap as _heap  # noqa: E402, F401
