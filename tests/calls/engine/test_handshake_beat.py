"""The owner of a handshake-era call beats on its rounds often enough for any stream grace:
a beat slower than ``MRTRWEB_STREAM_GRACE`` would have a live owner's rounds marked lost."""

from __future__ import annotations

import pytest
from django.test import override_settings

from mrtrweb.calls.engine.handshake_calls import BEAT, POLL, beat_interval


@pytest.mark.parametrize(
    ("grace", "interval"),
    [(30.0, BEAT), (15.0, BEAT), (6.0, 2.0), (2.0, 2.0 / 3), (0.1, POLL)],
)
def test_the_beat_is_a_third_of_a_short_grace(grace: float, interval: float) -> None:
    with override_settings(MRTRWEB_STREAM_GRACE=grace):
        assert beat_interval() == pytest.approx(interval)
