"""How many examples a property test draws (hypothesis' ``max_examples``).

``examples(150)`` is 150 in `make test`. `make test-fast`, the inner loop, sets
``MRTRWEB_PROPERTY_SCALE=0.2`` and draws a fifth of them (at least 10): each property still
runs on fresh random input every time, and the whole count runs in the full suite. The fuzz
suite has its own scale (tests/fuzz/support.py).
"""

from __future__ import annotations

import os


def examples(n: int) -> int:
    scale = float(os.environ.get("MRTRWEB_PROPERTY_SCALE", "1"))
    return max(min(n, 10), round(n * scale))
