"""Moments, outcomes and structured results as people read them (pure functions)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from mrtrweb.calls.models import Call
from mrtrweb.calls.presenting.outcome_badges import call_outcome, round_action
from mrtrweb.calls.presenting.server_content import Field, structured_fields
from mrtrweb.people.when import moment, moment_in_utc, relative

NOW = dt.datetime(2026, 12, 2, 7, 21, 30, tzinfo=dt.UTC)


def test_relative_times_say_just_now_never_zero_minutes() -> None:
    assert relative(NOW, NOW) == "just now"
    assert relative(NOW - dt.timedelta(seconds=59), NOW) == "just now"
    assert relative(NOW + dt.timedelta(seconds=20), NOW) == "just now"
    assert relative(NOW + dt.timedelta(minutes=8, seconds=10), NOW) == "in 8 minutes"
    assert relative(NOW - dt.timedelta(minutes=5), NOW) == "5 minutes ago"
    assert relative(NOW + dt.timedelta(hours=1, minutes=50), NOW) == "in 1 hour, 50 minutes"


def test_a_moment_is_relative_and_dated_in_the_zone_given() -> None:
    at = NOW + dt.timedelta(minutes=8)
    shown = moment(at, NOW, ZoneInfo("Europe/Oslo"))
    assert shown.both == "in 8 minutes — 2 Dec, 08:29"
    assert shown.full == "2 Dec 2026, 08:29 (Europe/Oslo)"
    # Another year is named.
    later = moment(at + dt.timedelta(days=40), NOW, dt.UTC)
    assert later.date == "11 Jan 2027, 07:29"
    assert moment_in_utc(at) == "2 Dec 2026, 07:29 UTC"


def test_outcomes_each_their_own() -> None:
    done = Call.Status.COMPLETED
    assert call_outcome(done).key == "completed"
    assert call_outcome(done, actions=["accept"]).key == "answered"
    assert call_outcome(done, actions=["accept", "decline"]).key == "declined"
    assert call_outcome(done, actions=["cancel"]).key == "cancelled"
    # The tool's own error wins over any answer.
    assert call_outcome(done, is_error=True, actions=["accept"]).key == "tool_error"
    for status, key in (
        (Call.Status.FAILED, "failed"),
        (Call.Status.EXPIRED, "expired"),
        (Call.Status.CANCELLED, "cancelled"),
        (Call.Status.WAITING, "waiting"),
        (Call.Status.RUNNING, "running"),
    ):
        assert call_outcome(status).key == key
    assert round_action({"a": {"action": "accept"}, "b": {"action": "decline"}}) == "mixed"
    assert round_action(None) == ""


def test_structured_content_becomes_a_labelled_table_nested_values_stay_json() -> None:
    rows = structured_fields(
        {
            "status": "deployed",
            "canary_percent": 5,
            "approved": True,
            "notify": ["ops", "qa"],
            "answers": {"window": "now"},
            "note": None,
        }
    )
    assert rows[:4] == (
        Field("Status", "deployed"),
        Field("Canary percent", "5"),
        Field("Approved", "yes"),
        Field("Notify", "ops, qa"),
    )
    assert rows[4].nested and '"window": "now"' in rows[4].value
    assert rows[5] == Field("Note", "(none)")
    # A list or a scalar is no table: only the raw JSON shows it.
    assert structured_fields([1, 2]) == ()
    assert structured_fields("text") == ()
