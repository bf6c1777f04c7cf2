"""``visible_rounds`` lists a round once, whichever of its paths makes it visible; the
lookups that read by key first (``visible_call``, ``newest_pending``, ``restarts_of``) answer
what the whole rule answers, and skip it where one of its own terms already holds."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mrtrweb.calls.access import (
    newest_pending,
    restarts_of,
    visible_call,
    visible_calls,
    visible_rounds,
)
from mrtrweb.calls.models import Call, Round
from mrtrweb.people.roles import ADMINS
from tests.factories import CallFactory, RoundFactory
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def test_a_round_seen_through_every_path_at_once_is_listed_once() -> None:
    User = get_user_model()
    ada = make_user("ada")
    other = User.objects.create_user("bo", password="pw-bo-123")
    groups = [Group.objects.create(name=f"team {n}") for n in range(3)]
    ada.groups.add(*groups)
    other.groups.add(*groups)
    call = CallFactory(started_by=ada)
    # Started by ada, routed to a group she is in (three memberships), claimed and answered
    # by her: every clause of the filter matches.
    mine = RoundFactory(call=call, assigned_group=groups[0], claimed_by=ada, answered_by=ada)
    theirs_call = CallFactory(connection=call.connection, started_by=other)
    claimed_by_other = RoundFactory(call=theirs_call, assigned_group=groups[1], claimed_by=other)
    unrelated = RoundFactory(call=theirs_call, assigned_user=other)

    seen = list(visible_rounds(ada))
    assert seen == [mine]
    assert visible_rounds(ada).filter(pk=mine.pk).count() == 1
    assert claimed_by_other not in seen and unrelated not in seen
    assert set(visible_rounds(other)) == {claimed_by_other, unrelated}
    assert "DISTINCT" not in str(visible_rounds(ada).query)


# -- the lookups read by key first (visible_call, newest_pending, restarts_of) ----------------


def _rule_ran(queries: CaptureQueriesContext) -> bool:
    """Whether the whole visibility rule was asked: only it reads the split rounds' parts."""
    return any("calls_roundpart" in q["sql"] for q in queries.captured_queries)


def _world() -> dict[str, Any]:
    ada, bo, cy = make_user("ada"), make_user("bo"), make_user("cy")
    admin = make_user("root", ADMINS)
    team = Group.objects.create(name="team")
    bo.groups.add(team)
    call = CallFactory(started_by=ada)
    return {"ada": ada, "bo": bo, "cy": cy, "admin": admin, "team": team, "call": call}


def test_visible_call_is_one_read_for_its_starter_and_the_rule_for_anyone_else() -> None:
    w = _world()
    call = w["call"]
    with CaptureQueriesContext(connection) as queries:
        assert visible_call(w["ada"], call.pk) == call
    assert len(queries) == 1 and not _rule_ran(queries)
    # Bo sees it only once a round of it is routed to his group: asked of the rule.
    assert visible_call(w["bo"], call.pk) is None
    RoundFactory(call=call, assigned_group=w["team"])
    with CaptureQueriesContext(connection) as queries:
        assert visible_call(w["bo"], call.pk) == call
    assert _rule_ran(queries)
    assert visible_call(w["cy"], call.pk) is None
    assert visible_call(w["admin"], call.pk) == call
    assert visible_call(w["ada"], 10**9) is None
    w["ada"].is_active = False
    assert visible_call(w["ada"], call.pk) is None
    # Exactly the calls the rule lists, for each of them.
    for who in ("ada", "bo", "cy", "admin"):
        assert (visible_call(w[who], call.pk) is not None) == (
            visible_calls(w[who]).filter(pk=call.pk).exists()
        ), who


def test_newest_pending_is_the_rule_s_newest_round_for_everyone() -> None:
    w = _world()
    call = w["call"]
    assert newest_pending(w["ada"], call) is None
    RoundFactory(call=call, assigned_user=w["ada"], status=Round.Status.DELIVERED)
    older = RoundFactory(call=call, assigned_group=w["team"])
    newer = RoundFactory(call=call, assigned_user=w["cy"])
    with CaptureQueriesContext(connection) as queries:
        assert newest_pending(w["ada"], call) == newer  # the starter, at once
    assert len(queries) == 1 and not _rule_ran(queries)
    assert newest_pending(w["cy"], call) == newer  # its assignee, at once
    # Bo does not see the newest one: the rule finds the newest he sees.
    with CaptureQueriesContext(connection) as queries:
        assert newest_pending(w["bo"], call) == older
    assert _rule_ran(queries)
    assert newest_pending(w["admin"], call) == newer
    stranger = make_user("dee")
    assert newest_pending(stranger, call) is None
    for who in ("ada", "bo", "cy", "admin"):
        expected = (
            visible_rounds(w[who])
            .filter(call=call, status=Round.Status.PENDING)
            .order_by("-index")
            .first()
        )
        assert newest_pending(w[who], call) == expected, who
    w["ada"].is_active = False
    with CaptureQueriesContext(connection) as queries:
        assert newest_pending(w["ada"], call) is None
    assert len(queries) == 0


def test_restarts_of_lists_the_restarts_the_person_may_see() -> None:
    w = _world()
    call = w["call"]
    assert restarts_of(w["ada"], call) == []

    def again(by: Any) -> Call:
        return CallFactory(connection=call.connection, started_by=by, restarted_from=call)

    own = again(w["ada"])
    with CaptureQueriesContext(connection) as queries:
        assert restarts_of(w["ada"], call) == [own]
    assert len(queries) == 1 and not _rule_ran(queries)
    # Started again by an admin: ada sees it only if the rule says so (it does not).
    by_admin = again(w["admin"])
    assert restarts_of(w["ada"], call) == [own]
    assert restarts_of(w["admin"], call) == [by_admin, own]
    RoundFactory(call=by_admin, assigned_user=w["ada"])
    assert restarts_of(w["ada"], call) == [by_admin, own]
    for who in ("ada", "bo", "cy", "admin"):
        assert restarts_of(w[who], call) == list(
            visible_calls(w[who]).filter(restarted_from=call)
        ), who
