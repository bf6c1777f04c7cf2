"""The fuzz suite's hypothesis profile.

The profile is applied per test (``@fuzz(n)``), not loaded globally, so the rest of the suite
keeps hypothesis' defaults. It is derandomized: every run tries the same examples, so a
failure is reproduced by running the test again (``.hypothesis/``, gitignored, also keeps
shrunk examples). ``MRTRWEB_FUZZ_SCALE`` multiplies the example counts (``3`` for a longer
hunt, ``0.1`` for a quick look); ``MRTRWEB_FUZZ_RANDOM=1`` tries new examples on every run;
``MRTRWEB_FUZZ_SHRINK=1`` shrinks a failure before reporting it.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

# Shrinking a failure of these big strategies can take hypothesis minutes; a failing run
# reports the example as found (reproducible: the run is derandomized) unless asked to shrink.
_PHASES = (
    tuple(Phase)
    if os.environ.get("MRTRWEB_FUZZ_SHRINK")
    else tuple(phase for phase in Phase if phase is not Phase.shrink)
)

settings.register_profile(
    "mrtrweb-fuzz",
    deadline=None,
    derandomize=not os.environ.get("MRTRWEB_FUZZ_RANDOM"),
    phases=_PHASES,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        # The database, the client and the round pool are shared by every example on purpose.
        HealthCheck.function_scoped_fixture,
        HealthCheck.large_base_example,
    ],
)


def examples(n: int) -> int:
    return max(1, round(n * float(os.environ.get("MRTRWEB_FUZZ_SCALE", "1"))))


def fuzz(n: int) -> Any:
    """``@fuzz(3000)``: the profile, with ``n`` examples (times ``MRTRWEB_FUZZ_SCALE``)."""
    return settings(settings.get_profile("mrtrweb-fuzz"), max_examples=examples(n))
