"""``visible_rounds`` lists a round once, whichever of its paths makes it visible."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from mrtrweb.calls.access import visible_rounds
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def test_a_round_seen_through_every_path_at_once_is_listed_once() -> None:
    User = get_user_model()
    ada = make_user("ada")
    other = User.objects.create_user("bo", password="pw-bo-123")
    groups = [Group.objects.create(name=f"team {n}") for n in range(3)]
    ada.groups.add(*groups)
    other.groups.add(*groups)
    conn = Connection.objects.create(name="c", url="http://127.0.0.1:9/mcp")
    call = Call.objects.create(connection=conn, method=Call.Method.TOOL, target="t", started_by=ada)
    # Started by ada, routed to a group she is in (three memberships), claimed and answered
    # by her: every clause of the filter matches.
    mine = Round.objects.create(
        call=call, index=1, assigned_group=groups[0], claimed_by=ada, answered_by=ada
    )
    theirs_call = Call.objects.create(
        connection=conn, method=Call.Method.TOOL, target="t", started_by=other
    )
    claimed_by_other = Round.objects.create(
        call=theirs_call, index=1, assigned_group=groups[1], claimed_by=other
    )
    unrelated = Round.objects.create(call=theirs_call, index=2, assigned_user=other)

    seen = list(visible_rounds(ada))
    assert seen == [mine]
    assert visible_rounds(ada).filter(pk=mine.pk).count() == 1
    assert claimed_by_other not in seen and unrelated not in seen
    assert set(visible_rounds(other)) == {claimed_by_other, unrelated}
    assert "DISTINCT" not in str(visible_rounds(ada).query)
