"""Who may see a call and answer its rounds: the one place the pages ask.

- Admins (``calls.manage_rounds``, superusers included) see and manage everything; under a
  quorum they vote only as approvers, as anyone (``engine.quorum.eligible``).
- Anyone else sees the calls they started, and the rounds routed to them: assigned to them,
  or to one of their groups and not claimed by someone else. Through such a round they also
  see its call.
- Delegations: while a person is away, whoever stands in for them sees and answers the
  pending rounds routed to them (not a group's, not split) of calls they did not start, and
  the new ones routed to the delegate for them; they still see and may answer the rounds
  routed to their delegate for them. A round held as a stand-in is not passed on again, and
  a reassignment ends the standing in. Nothing else of the absent person's is shown.
- A round is answered by its assignee (or their stand-in, or the person it was delegated
  from), or by a member of its group who has not been beaten to it by another member's claim.
- A split round is routed by its parts instead: each person sees and answers only
  the part (the questions) routed to them, or to one of their groups (:func:`part_for`,
  :func:`shown_to`); its own assignee answers only the part no route named.
- Seeing a call is not reading every round of it: of a round that is not theirs to open (nor
  a part of it), whoever sees the call reads only that it exists and its status
  (:func:`readings`); its starter and admins read everything.

Beside it in this package: ``routing`` (who is asked, and who stands in for someone away),
which these queries build on, and ``rules``, the same rules over plain values, which
``tests/calls/access/test_rules.py`` holds these queries to.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import lru_cache, reduce
from operator import or_
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db.models import Exists, F, Model, OuterRef, Q, QuerySet
from django.urls import reverse

from mrtrweb.people.roles import is_admin
from mrtrweb.policies.resolve import delegating_to
from mrtrweb.servers.exposure import may_start, sees_whole_catalog

from ..models import Call, Round, RoundPart
from .routing import answers_as_routed

M = TypeVar("M", bound=Model)


def by_key(rows: QuerySet[M], pk: Any) -> M | None:
    """The row of ``rows`` whose key is ``pk``, or None.

    Not ``rows.filter(pk=pk).first()``: ``first()`` adds an ORDER BY (the model's ordering, or
    the key), and compiling it against the round pages' wide ``select_related`` (some 140
    columns) is about half a millisecond of Django's time, a third of the lookup's, for a
    query that can find one row at most.
    """
    return next(iter(rows.filter(pk=pk).order_by()[:1]), None)


def _active(user: User) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_active)


def _own_ways(user: User, *, pending: bool = False) -> list[Q]:
    """Each way a round (not split) is routed to ``user``: theirs; those ``user`` stands in
    for now (:func:`standing_in`, with delegations: ``policies.Delegation``); those routed to
    someone standing in for ``user``; their groups' that nobody else claimed.

    ``pending``: for rounds already filtered to pending ones, the stand-in's own check of the
    status is left out. Said twice, it makes SQLite's planner (no statistics: nobody runs
    ``ANALYZE``) read every pending round instead of the assignee index's short range."""
    return [
        Q(assigned_user=user),
        _standing_in(user, pending=pending),
        Q(delegated_from=user),
        Q(assigned_group__in=_groups_of(user)) & (Q(claimed_by__isnull=True) | Q(claimed_by=user)),
    ]


def _groups_of(user: User) -> QuerySet[Any]:
    """The keys of ``user``'s groups, for a subquery: read from the membership table alone
    (``user.groups.all()`` joins the groups' own table for nothing, and costs the ORM more to
    build on every page)."""
    return User.groups.through.objects.filter(user=user).values("group_id")


def _own(user: User) -> Q:
    """Rounds (not split) routed to ``user``: any of :func:`_own_ways`."""
    return reduce(or_, _own_ways(user))


def standing_in(user: User) -> Q:
    """Rounds ``user`` answers for someone away now: pending, routed to that person (and not
    held by them as someone's stand-in: no chains), of a call neither that person nor
    ``user`` started."""
    return _standing_in(user, pending=False)


def _standing_in(user: User, *, pending: bool) -> Q:
    status = {} if pending else {"status": Round.Status.PENDING}
    return (
        Q(**status, delegated_from__isnull=True, assigned_user__in=delegating_to(user))
        & ~Q(call__started_by=F("assigned_user"))
        & ~Q(call__started_by=user)
    )


def parts_of(user: User) -> QuerySet[RoundPart]:
    """Parts of split rounds routed to ``user`` (theirs or their groups'), or answered by them."""
    return RoundPart.objects.filter(
        Q(assigned_user=user) | Q(assigned_group__in=_groups_of(user)) | Q(answered_by=user)
    )


def routed_to(user: User) -> Q:
    """Rounds routed to ``user``: theirs, or their groups' that nobody else claimed; a split
    round through one of its parts only."""
    return (Q(split=False) & _own(user)) | Q(split=True, pk__in=parts_of(user).values("round_id"))


def _part_ways(user: User) -> list[Q]:
    """Each way a part of a split round is routed to ``user``: theirs, their groups'."""
    return [Q(assigned_user=user), Q(assigned_group__in=_groups_of(user))]


def waiting_for(user: User) -> Q:
    """:func:`routed_to`, less split rounds whose parts for ``user`` are all answered: what
    the inbox lists as waiting (with the rounds' own status). :func:`waiting_ways` asks the
    same one way at a time."""
    mine = RoundPart.objects.filter(status=RoundPart.Status.PENDING).filter(
        reduce(or_, _part_ways(user))
    )
    return (Q(split=False) & _own(user)) | Q(split=True, pk__in=mine.values("round_id"))


def waiting_ways(user: User, pending: Q) -> list[QuerySet[Any]]:
    """The keys of the rounds that match ``pending`` (pending rounds, and whatever else the
    caller asks) and wait for ``user``, one query per way of being routed (their union is
    ``Round.objects.filter(pending & waiting_for(user))``'s), made of :func:`waiting_for`'s
    terms: for counting them one way at a time.

    Each reads a short range of one index (the rounds' assignee, group and delegator indexes;
    the parts' assignee and group ones, both in one query), where :func:`waiting_for`'s OR of
    them reads every pending round of everyone. A split round's ways start from its parts,
    each part's round looked up by its key: with the round's columns in the outer query,
    SQLite without statistics reads every pending round to match them against the parts'
    list. Each query is one ``filter()`` on what they share that depends on nobody
    (:func:`_waiting_bases`, built once): a page asks for them all on every request."""
    rounds, parts = _waiting_bases(pending)
    return [rounds.filter(way).values("pk") for way in _own_ways(user, pending=True)] + [
        # Both of a part's ways in one query: each names an indexed column (the parts'
        # assignee and group indexes), so both databases read the two short ranges (SQLite's
        # OR by union of indexes) and the ORM builds one query fewer on every page.
        parts.filter(reduce(or_, _part_ways(user))).values("round_id").distinct()
    ]


@lru_cache(maxsize=8)
def _waiting_bases(pending: Q) -> tuple[QuerySet[Round], QuerySet[RoundPart]]:
    """:func:`waiting_ways`' rounds not split that match ``pending``, and pending parts of
    split rounds that match it: the same for everyone, so built once for each ``pending``
    (the header passes one). Never evaluated here, only filtered further (each ``filter()``
    is a copy), so no results are kept."""
    rounds = Round.objects.order_by()
    its_round = Exists(rounds.filter(pending & Q(split=True, pk=OuterRef("round_id"))))
    return (
        rounds.filter(pending & Q(split=False)),
        RoundPart.objects.order_by().filter(Q(status=RoundPart.Status.PENDING) & its_round),
    )


def part_for(user: User, round: Round) -> RoundPart | None:
    """The part of split ``round`` that ``user`` sees: the first one waiting for them, else
    the first they answered or were asked; None for anyone else (and for rounds not split).
    Admins see the part routed to them, if any, else the whole round (read only)."""
    if not round.split or not _active(user):
        return None
    parts = list(
        RoundPart.objects.filter(round=round)
        .filter(Q(assigned_user=user) | Q(assigned_group__in=user.groups.all()))
        .select_related("answered_by")
        .order_by("id")
    ) or list(
        RoundPart.objects.filter(round=round, answered_by=user)
        .select_related("answered_by")
        .order_by("id")
    )
    waiting = [p for p in parts if p.is_pending]
    return (waiting or parts or [None])[0]


def shown_to(user: User, round: Round) -> Round:
    """``round`` as ``user`` may read it: a split round narrowed to their part (its questions
    and answers only, never another part's), else the round itself.

    The narrowed round is a copy in memory, never saved: its ``input_requests`` hold only the
    part's keys, ``answers`` the part's, and its status reads "submitted" once the part is
    answered while the round still waits for the others. Whoever has no part and may still
    see the round (its caller, an admin) reads it whole.
    """
    part = part_for(user, round)
    return round if part is None else narrowed(round, part)


def narrowed(round: Round, part: RoundPart) -> Round:
    """An unsaved copy of ``round`` showing only ``part`` (see :func:`shown_to`)."""
    shown = copy.copy(round)
    # Not shared with the original: the copy's cached relations are its own.
    shown._state = copy.copy(round._state)
    shown._state.fields_cache = dict(round._state.fields_cache)
    requests = round.input_requests or {}
    shown.input_requests = {key: requests[key] for key in part.keys if key in requests}
    shown.answers = part.answers
    shown.part = part
    # What the live socket compares with the database (templates/calls/_live_socket.html).
    shown.live_status = round.status
    if not part.is_pending:
        shown.answered_by = part.answered_by
        shown.answered_at = part.answered_at
        if round.status == Round.Status.PENDING:
            shown.status = Round.Status.SUBMITTED
    return shown


def readings(user: User, rounds: Sequence[Round]) -> dict[int, Round | None]:
    """What ``user`` may read of each of ``rounds`` (a call's, as its page or the API list
    them), by key: the round whole, a split round narrowed to their part (:func:`shown_to`),
    or None, only that it exists and its status.

    Its starter and admins read each round as :func:`shown_to` shows it. Anyone else (who
    sees the call through one of its rounds) reads whole only a round they may open
    (:func:`visible_rounds`), of a split round only their part, and nothing of the others:
    seeing a call never shows its other rounds' questions, answers or comments.
    """
    if not rounds or not _active(user):
        return {r.pk: None for r in rounds}
    if sees_call_at_once(user, rounds[0].call.started_by_id):
        return {r.pk: shown_to(user, r) for r in rounds}
    whole = [r.pk for r in rounds if not r.split]
    opened = set(visible_rounds(user).filter(pk__in=whole).values_list("pk", flat=True))
    read: dict[int, Round | None] = {}
    for r in rounds:
        if r.split:
            part = part_for(user, r)
            read[r.pk] = None if part is None else narrowed(r, part)
        else:
            read[r.pk] = r if r.pk in opened else None
    return read


# What the pages show of a round besides itself (one join each, all many-to-one).
_ROUND_RELATIONS = (
    "call__connection",
    "call__started_by",
    "answered_by",
    "assigned_user",
    "assigned_group",
    "claimed_by",
)


def visible_rounds(user: User) -> QuerySet[Round]:
    """The rounds ``user`` may look at."""
    rounds = Round.objects.select_related(*_ROUND_RELATIONS)
    if not _active(user):
        return rounds.none()
    if is_admin(user):
        return rounds
    # No DISTINCT: every join is many-to-one and the groups are an IN subquery, so a round
    # comes once; DISTINCT over these wide rows made SQLite sort them on every page.
    return rounds.filter(routed_to(user) | Q(answered_by=user) | Q(call__started_by=user))


def visible_round(user: User, pk: int) -> Round | None:
    """Round ``pk`` if ``user`` may look at it (:func:`visible_rounds`), else None.

    Read by its key first: when :func:`_sees_round_at_once` says the round is theirs to see,
    it is, without building and running the whole rule with its group, delegation and part
    subqueries (the round page's costliest work, on every request). Anyone else is asked the
    whole rule, exactly as before.
    """
    if not _active(user):
        return None
    found = by_key(Round.objects.select_related(*_ROUND_RELATIONS), pk)
    if found is None:
        return None
    if _sees_round_at_once(user, found):
        return found
    return by_key(visible_rounds(user), pk)


def _sees_round_at_once(user: User, round: Round) -> bool:
    """Whether one of :func:`visible_rounds`' own terms holds for ``round`` as read, with no
    query beyond the person's permissions: they are an admin, the call's starter, the
    round's answerer or (a round not split) its assignee. False says only "ask the rule"."""
    return (
        round.call.started_by_id == user.pk
        or round.answered_by_id == user.pk
        or (not round.split and round.assigned_user_id == user.pk)
        or is_admin(user)
    )


def newest_pending(user: User, call: Call) -> Round | None:
    """The newest pending round of ``call`` that ``user`` may look at, or None.

    The call's newest pending round is read first, and is the answer when
    :func:`_sees_round_at_once` holds for it (then no round of the call the person sees can be
    newer); otherwise the whole rule is asked, as before.
    """
    if not _active(user):
        return None

    newest = (
        Round.objects.select_related(*_ROUND_RELATIONS)
        .filter(call=call, status=Round.Status.PENDING)
        .order_by("-index")
        .first()
    )
    if newest is None or _sees_round_at_once(user, newest):
        return newest
    return (
        visible_rounds(user)
        .filter(call=call, status=Round.Status.PENDING)
        .order_by("-index")
        .first()
    )


def visible_call(user: User, pk: int) -> Call | None:
    """Call ``pk`` if ``user`` may look at it (:func:`visible_calls`), else None.

    As :func:`visible_round`: read by its key first, and theirs to see when they started it
    or are an admin (the call page of a person following their own call, every reload);
    anyone else is asked the whole rule.
    """
    found = by_key(_calls(), pk) if _active(user) else None
    return found if found is not None and sees_call(user, found) else None


def _calls() -> QuerySet[Call]:
    return Call.objects.select_related("connection", "started_by")


def sees_call(user: User, call: Call) -> bool:
    """Whether ``user`` may look at ``call`` (:func:`visible_calls`): at once for its starter
    and admins, else by the whole rule."""
    if not _active(user):
        return False
    return (
        sees_call_at_once(user, call.started_by_id)
        or visible_calls(user).filter(pk=call.pk).exists()
    )


def sees_call_at_once(user: User, started_by_id: int) -> bool:
    """Whether one of :func:`visible_calls`' own terms holds for the call that person
    ``started_by_id`` started (a call's starter never changes), with no query beyond the
    person's permissions: they started it, or are an admin. False says only "ask the rule"."""
    return started_by_id == user.pk or is_admin(user)


def restarts_of(user: User, call: Call) -> list[Call]:
    """The calls started again from ``call`` that ``user`` may look at, newest first.

    Read as they are first (nearly always none, or the person's own): the whole rule is
    asked only when one of them was started by someone else and ``user`` is no admin.
    """
    if not _active(user):
        return []
    restarts = list(_calls().filter(restarted_from=call))
    if all(sees_call_at_once(user, c.started_by_id) for c in restarts):
        return restarts
    return list(visible_calls(user).filter(restarted_from=call))


def visible_calls(user: User) -> QuerySet[Call]:
    """The calls ``user`` may look at: started by them, or with a round routed to them."""
    calls = _calls()
    if not _active(user):
        return calls.none()
    if is_admin(user):
        return calls
    mine = Round.objects.filter(routed_to(user) | Q(answered_by=user)).values("call_id")
    return calls.filter(Q(started_by=user) | Q(pk__in=mine))


def taken_from(user: User, pk: int) -> Round | None:
    """Round ``pk`` when ``user`` may no longer see it only because another member of its
    group took it (claimed or answered it): they were asked too, so they are told who took
    it and when, instead of a 404. None for anyone else (a 404 as before: nothing leaks)."""
    if not _active(user):
        return None
    return (
        Round.objects.select_related(
            "call__connection", "call__started_by", "answered_by", "claimed_by", "assigned_group"
        )
        .filter(pk=pk, assigned_group__in=user.groups.all(), claimed_by__isnull=False)
        .exclude(claimed_by=user)
        .first()
    )


def can_answer(user: User, round: Round) -> bool:
    """Whether ``user`` may answer (or abandon) ``round``."""
    if not _active(user):
        return False
    if round.split:
        # Only through a part routed to them (admins' included); whether it still waits is
        # the engine's to say (a second post is told it was answered).
        return part_for(user, round) is not None
    if is_admin(user):
        return True
    return answers_as_routed(user, round)


def can_act_on_call(user: User, call: Call) -> bool:
    """Whether ``user`` may restart ``call``: they see it, and may start it themselves.

    Starting again is starting a call, so the start pages' rule applies too: end users only
    tools exposed to them, nobody on a disabled connection.
    """
    if not sees_call(user, call):
        return False
    if call.method == Call.Method.TOOL:
        return may_start(user, call.connection, call.target)
    # Prompts and resources are not exposable: only those who see the whole catalog use them.
    return call.connection.enabled and sees_whole_catalog(user)


def next_page(call: Call, user: User | None = None) -> str:
    """Where a person goes after acting on a call: its pending round (if ``user``, given, may
    see it), or the call page. Shared by the start page and the round and call pages."""
    if call.status == Call.Status.WAITING:
        if user is None:
            pending = (
                Round.objects.filter(call=call, status=Round.Status.PENDING)
                .order_by("-index")
                .values_list("pk", flat=True)
                .first()
            )
        else:
            # Not a split round whose parts for them are answered: it waits for the others.
            pending = (
                visible_rounds(user)
                .filter(call=call, status=Round.Status.PENDING)
                .exclude(Q(split=True) & ~waiting_for(user))
                .order_by("-index")
                .values_list("pk", flat=True)
                .first()
            )
        if pending is not None:
            return reverse("calls:round", kwargs={"pk": pending})
    return call.get_absolute_url()
