"""How an inbox message is addressed (``events.inbox_sends``): per person for a few, once to
every inbox socket for many, carrying only ids; and each socket knows whether it is named."""

from __future__ import annotations

from typing import Any

import pytest
from channels.layers import channel_layers

from mrtrweb import env
from mrtrweb.live import events


def test_a_few_people_get_a_message_each_in_their_own_group() -> None:
    sends = events.inbox_sends({7, 3}, "claimed", 1.5)
    message = {"type": "inbox.changed", "kind": "claimed", "at": 1.5}
    assert sends == [("user.3", message), ("user.7", message)]
    assert events.concerns(message, 3) and events.concerns(message, 99)


def test_many_people_get_one_message_naming_them_and_nothing_else() -> None:
    many = set(range(1, events.BROADCAST_FROM + 1))
    [(group, message)] = events.inbox_sends(many, "round_parked", 2.0)
    assert group == events.INBOX_GROUP
    assert set(message) == {"type", "kind", "at", "people"}
    assert all(events.concerns(message, pk) for pk in many)
    assert not events.concerns(message, 0)
    assert not events.concerns(message, events.BROADCAST_FROM + 1)
    # An id is matched whole, not as part of another.
    assert not events.concerns({**message, "people": "11,12"}, 1)


@pytest.mark.parametrize("count", [0, 1])
def test_nobody_or_one_person_is_never_everyone(count: int) -> None:
    sends = events.inbox_sends(set(range(count)), "claimed", 0.0)
    assert all(group != events.INBOX_GROUP for group, _ in sends)
    assert len(sends) == count


def test_the_in_memory_layer_sends_per_person_and_redis_once(settings: Any) -> None:
    settings.CHANNEL_LAYERS = env.channel_layers(None, "")
    channel_layers.backends.clear()
    try:
        assert events.broadcast_from() is None
        settings.CHANNEL_LAYERS = env.channel_layers("redis://127.0.0.1:6379/0", "t")
        channel_layers.backends.clear()
        assert events.broadcast_from() == events.BROADCAST_FROM
    finally:
        channel_layers.backends.clear()
    many = set(range(events.BROADCAST_FROM + 1))
    assert len(events.inbox_sends(many, "claimed", 0.0, None)) == len(many)
