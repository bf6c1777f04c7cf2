"""``MRTRWEB_INPROCESS_WORKER`` and its interval, read from the environment (mrtrweb/env.py)."""

from __future__ import annotations

import pytest

from mrtrweb.env import EnvError, env_float, inprocess_worker


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, True),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, False),
        ({"REDIS_URL": "  "}, True),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0", "MRTRWEB_INPROCESS_WORKER": "1"}, True),
        ({"MRTRWEB_INPROCESS_WORKER": "off"}, False),
    ],
)
def test_on_without_redis_off_with_it_unless_told(environ: dict[str, str], expected: bool) -> None:
    assert inprocess_worker(environ) is expected


def test_a_typo_is_refused() -> None:
    with pytest.raises(EnvError):
        inprocess_worker({"MRTRWEB_INPROCESS_WORKER": "ture"})


def test_the_interval_is_a_positive_number() -> None:
    name = "MRTRWEB_INPROCESS_WORKER_INTERVAL"
    assert env_float({}, name, 0.5) == 0.5
    assert env_float({name: "0.2"}, name, 0.5) == 0.2
    for bad in ("0", "-1", "soon", "nan"):
        with pytest.raises(EnvError):
            env_float({name: bad}, name, 0.5)
