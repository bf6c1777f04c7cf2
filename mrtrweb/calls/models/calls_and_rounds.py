"""``Call`` and ``Round``: calls to MCP servers and their input-required rounds.

Only :mod:`mrtrweb.calls.engine` changes a call's or a round's status; every
transition there is a guarded ``UPDATE ... WHERE status = <expected>``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

from mrtrweb.elicitation.questions import Question, read_questions, summary
from mrtrweb.encryption.fields import EncryptedCompactTextField, EncryptedJSONField
from mrtrweb.mcp.headers import header_schema
from mrtrweb.servers.models import Connection

from .bases import assignment, where_set
from .fields import CompactJSONField, TextJSONField

if TYPE_CHECKING:
    from django.db.models.fields.related_descriptors import RelatedManager


def state_sha256(state: str | None) -> str:
    """What the audit trail and the logs know a ``requestState`` by: its SHA-256 (hex) as
    UTF-8, "" without one. Computed here only."""
    return hashlib.sha256(state.encode("utf-8")).hexdigest() if state is not None else ""


# Round's base is made by a call, which mypy cannot follow: its reverse manager, named here.
class Call(models.Model):  # type: ignore[django-manager-missing]
    rounds: RelatedManager[Round]

    class Method(models.TextChoices):
        TOOL = "tools/call", _("tool")
        PROMPT = "prompts/get", _("prompt")
        RESOURCE = "resources/read", _("resource")

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        WAITING = "waiting", _("waiting for input")
        COMPLETED = "completed", _("completed")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")
        EXPIRED = "expired", _("expired")

    FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.EXPIRED)

    connection = models.ForeignKey(Connection, on_delete=models.PROTECT, related_name="calls")
    method = models.CharField(max_length=32, choices=Method.choices)
    # The tool or prompt name, or the resource URI.
    target = models.CharField(max_length=2000)
    # The arguments exactly as first sent: servers bind requestState to a digest of them.
    arguments_json = models.TextField(default="{}")
    # The connection's token and headers when the call started: servers bind requestState to
    # the caller's identity, so every round is resubmitted with these, whoever answers it.
    credentials = EncryptedJSONField(null=True, blank=True)
    # What later rounds need of the tool as listed when the call started (see tool_for_rounds):
    # any worker mirrors its x-mcp-header arguments, and resends it once if idempotent.
    tool = TextJSONField(null=True, blank=True)
    # Indexed by call_starter_created (a composite whose first column it is).
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="calls", db_index=False
    )
    # Indexed by call_status_created.
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # Input-required results received so far (state-only ones included), against the cap.
    rounds_used = models.PositiveSmallIntegerField(default=0)
    result = CompactJSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Who the program that started the call asked for (the JSON API's "assignee" or "group");
    # when set, it wins over the tool's and the connection's routing policy.
    # Nearly always NULL: these three are indexed only where set (see Meta.indexes), which is
    # what deleting a user or group (SET_NULL) and the call page's restarts need.
    route_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    route_group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    restarted_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="restarts",
        db_index=False,
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the first request was claimed for sending (engine.send_call): whoever sets it is
    # the only one who sends, so a start page's delivery thread and its safety-net task never
    # both do.
    sent_at = models.DateTimeField(null=True, blank=True)
    # When the scheduler (mrtrweb.scheduler) next looks at a running call: a few seconds after
    # it was created, to send it should its process have died first; once sent, its
    # watchdog's deadline (engine.watchdogs).
    watch_at = models.DateTimeField(null=True, blank=True)
    # The server's latest progress notification while it works ({progress, total, message,
    # at}), so a page loaded or reloaded meanwhile shows it; cleared when the call moves on.
    progress = models.JSONField(null=True, blank=True)
    # Set while the call's next request (its first, or a round's answers) waits for the
    # caller (or an operator, for a shared account) to connect an account on the server again:
    # nothing was sent, nothing is lost, and ``authorizations.signals.connected`` sends it.
    waiting_for_authorization_since = models.DateTimeField(null=True, blank=True)
    # Why, in words for people (who must reconnect, and why); never a token.
    waiting_for_authorization_reason = models.CharField(max_length=500, blank=True, default="")
    # The approval policy the call started with (mrtrweb.policies.snapshot.PolicySnapshot as
    # JSON, only what differs from none): a policy edited later never changes a call in flight.
    policy = TextJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # Ascending (read backwards for newest first): new rows then land at the end of
            # their range, and the pages fill up instead of splitting in half.
            models.Index(fields=["status", "created_at"], name="call_status_created"),
            models.Index(fields=["started_by", "created_at"], name="call_starter_created"),
            where_set("route_user", "call_route_user_set"),
            where_set("route_group", "call_route_group_set"),
            where_set("restarted_from", "call_restarted_from_set"),
            # What an account connected resumes: the few calls waiting on one connection.
            models.Index(
                fields=["connection", "started_by"],
                name="call_waiting_authorization",
                condition=models.Q(waiting_for_authorization_since__isnull=False),
            ),
            # What the scheduler looks up every second: the few running calls.
            models.Index(
                fields=["watch_at"], name="call_running_watch", condition=models.Q(status="running")
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_method_display()} {self.target} on {self.connection.name}"

    def get_absolute_url(self) -> str:
        return reverse("calls:call", kwargs={"pk": self.pk})

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @staticmethod
    def tool_for_rounds(tool: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a call keeps of its tool's listing (``tool``, as JSON): its name, the part of
        its input schema that ``x-mcp-header`` mirroring reads, and the hints ``idempotentHint``
        (one automatic resend) and ``readOnlyHint`` (with it, the renewal policy may run the
        call again); None when the tool has none of them (nothing later rounds would use). Its
        description and full schema are the catalog's, not every call's."""
        schema = header_schema(tool.get("inputSchema"))
        annotations = tool.get("annotations")
        hints = {
            hint: True
            for hint in ("idempotentHint", "readOnlyHint")
            if isinstance(annotations, Mapping) and annotations.get(hint) is True
        }
        if schema is None and not hints:
            return None
        kept: dict[str, Any] = {
            "name": tool.get("name"),
            "inputSchema": schema if schema is not None else {"type": "object"},
        }
        if hints:
            kept["annotations"] = hints
        return kept


# mypy takes a base made by a call as Any: the shared fields are untyped on Round.
class Round(assignment("rounds")):  # type: ignore[misc]
    class Status(models.TextChoices):
        PENDING = "pending", _("waiting for an answer")
        SUBMITTED = "submitted", _("answered, waiting to be sent")
        DELIVERING = "delivering", _("being sent")
        DELIVERED = "delivered", _("delivered")
        FAILED = "failed", _("could not be delivered")
        # Sent, but no usable answer came back: the server may have acted on it, so it is not
        # resent blindly; an admin chooses to resend or abandon it.
        UNKNOWN = "unknown", _("sent, outcome unknown: waiting for an admin")
        EXPIRED = "expired", _("expired")
        CANCELLED = "cancelled", _("cancelled")
        # Renewal policy: its state expired, the call was issued again and the server asked
        # something else; the round that asks it now replaces this one (``replaces``).
        CHANGED = "changed", _("replaced: the server's questions changed")

    class Carrier(models.TextChoices):
        RETRY = "retry", _("a retry of the request")
        STREAM = "stream", _("the response on the call's open stream")

    # Indexed by round_index_unique_per_call (call first).
    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="rounds", db_index=False)
    index = models.PositiveSmallIntegerField()
    # The inputRequests exactly as received (keys are arbitrary server strings).
    input_requests = TextJSONField(default=dict)
    # Their messages as plain text, filled when parked: what the admins' search looks in
    # (JSON text escapes non-ASCII and quotes on some databases, and cannot be indexed).
    summary = models.TextField(blank=True, default="")
    # requestState is opaque, echoed byte for byte, and never shown to a browser.
    has_request_state = models.BooleanField(default=False)
    # Its SHA-256 is not stored here: the round_parked event records it (see
    # request_state_sha256).
    request_state = EncryptedCompactTextField(null=True, blank=True)
    # Set when a request in this round is of a kind or shape the client cannot answer.
    unsupported_reason = models.TextField(blank=True)
    # Split between people by the call's split policy: its RoundPart rows say who
    # answers which keys, and they, not the round's own routing, decide who sees it.
    split = models.BooleanField(default=False)
    # Indexed by round_status_created and round_status_deadline (status first).
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # inputResponses as sent: {key: {"action": ..., "content": {...}}}.
    answers = CompactJSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    # Only ever filtered beside assigned_group (which the index finds); indexed where set,
    # for deleting a user (SET_NULL).
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_rounds",
        db_index=False,
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # When the server's state for this round dies (the connection's state_lifetime): the
    # expiry task's deadline. Without a renewal policy it is also the person's deadline; with
    # one it never passes the person's, and a round without state is kept until the person's
    # (engine.renewal_policy.expires_at).
    expires_at = models.DateTimeField(null=True, blank=True)
    # Renewal policy (engine.renewal_policy): the person's deadline (parked + the policy's
    # renew_for), set only when the call's rounds are renewed; until then an expired state is
    # renewed instead of expiring the round. ``renewals`` counts the times it was.
    renew_until = models.DateTimeField(null=True, blank=True)
    renewals = models.PositiveSmallIntegerField(default=0)
    # A round parked because a renewal found other questions: the round it replaces, and what
    # changed ([{"key", "change": added|removed|kind|message|schema, "message", "was"}]).
    replaces = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    changes = CompactJSONField(null=True, blank=True)
    delivery_error = models.TextField(blank=True)
    # Delivery attempts so far (each one claimed submitted -> delivering), when the next
    # automatic one is due, when the current one started, and the last HTTP status seen.
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivering_since = models.DateTimeField(null=True, blank=True)
    # When the server last showed it is still working on the current attempt (a progress
    # notification): the watchdog counts its deadline from here, so a long call that keeps
    # reporting progress is not taken for a dead one. On a stream round: the owner's
    # heartbeat, while it holds the stream.
    heard_at = models.DateTimeField(null=True, blank=True)
    # When the scheduler (mrtrweb.scheduler) next looks at a round's delivery: while
    # submitted, when to send it (an answer's process had a few seconds to, a backoff's next
    # attempt, a queued send that may be lost); while delivering, the attempt's deadline
    # (engine.watchdogs). Set by every transition into either status (engine.transitions).
    watch_at = models.DateTimeField(null=True, blank=True)
    last_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # How the answer reaches the server: as a retry of the request (2026-07-28, with the
    # requestState), or as the JSON-RPC response to a question asked on the open stream of a
    # handshake-era call, which only the process holding that stream can send (``owner``:
    # "host:pid:nonce"; its heartbeat is ``heard_at``, see engine.streams).
    carrier = models.CharField(max_length=8, choices=Carrier.choices, default=Carrier.RETRY)
    owner = models.CharField(max_length=200, blank=True, default="")
    # When the outcome of a delivery became unknown, and whether the one automatic resend an
    # idempotent tool is allowed was already spent.
    flagged_at = models.DateTimeField(null=True, blank=True)
    auto_resent = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # A quorum round (engine.quorum): the first person's answers, shown read only to the
    # approvers until enough of them approve (then they are the round's answers, sent once)
    # or enough reject. ``proposed_at`` is the guard: whoever sets it first is the proposer.
    proposal = CompactJSONField(null=True, blank=True)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    proposed_at = models.DateTimeField(null=True, blank=True)
    # Reminders and escalation (engine.reminders, engine.escalation; the call's policy says
    # when): how many of the policy's reminders were sent (each is sent once, whichever task
    # or sweep gets there first), when the next reminder or the escalation is due (NULL when
    # nothing more is; indexed where set, what the reminder tasks look up), and when the
    # round was escalated to the policy's fallback (once).
    reminders_sent = models.PositiveSmallIntegerField(default=0)
    remind_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # The person the round was routed to when their delegate got it instead (a delegation,
    # mrtrweb.policies): the delegate answers "for" them, and they still see it.
    delegated_from = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )

    class Meta:
        ordering = ["call_id", "index"]
        permissions = [("manage_rounds", "Can see and manage every call and round")]
        indexes = [
            # Ascending, like the calls' (see there).
            models.Index(fields=["status", "created_at"], name="round_status_created"),
            # Only where set: a round is routed to a user or to a group, and no page looks
            # up the rounds routed to nobody, so each holds only the rounds routed its way.
            # Every lookup names the column (= or IN), which implies the condition for both
            # databases' planners.
            where_set("assigned_user", "round_assignee_status", "status"),
            where_set("assigned_group", "round_group_status", "status"),
            models.Index(fields=["status", "expires_at"], name="round_status_deadline"),
            where_set("answered_by", "round_answerer_answered", "-answered_at"),
            where_set("claimed_by", "round_claimer_set"),
            where_set("remind_at", "round_remind_at_set"),
            where_set("delegated_from", "round_delegated_from_set"),
            # What the scheduler looks up every second: the few rounds in flight, and the
            # open questions on streams (their owner's heartbeat).
            models.Index(
                fields=["status", "watch_at"],
                name="round_in_flight_watch",
                condition=models.Q(status__in=["submitted", "delivering"]),
            ),
            models.Index(
                fields=["heard_at"],
                name="round_stream_open",
                condition=models.Q(
                    carrier="stream", status__in=["pending", "submitted", "delivering"]
                ),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["call", "index"], name="round_index_unique_per_call")
        ]

    def __str__(self) -> str:
        return f"round {self.index} of call {self.call_id}"

    def get_absolute_url(self) -> str:
        return reverse("calls:round", kwargs={"pk": self.pk})

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def answer_by(self) -> Any:
        """The deadline a person sees: the renewal policy's when it renews the round (the
        server's state is then renewed behind it), else the server's state deadline."""
        return self.renew_until or self.expires_at

    @property
    def is_flagged(self) -> bool:
        """Sent with an unknown outcome: the answers are safe, an admin decides what next."""
        return self.status == self.Status.UNKNOWN

    def set_request_state(self, state: str | None) -> None:
        self.has_request_state = state is not None
        self.request_state = state
        self.__dict__.pop("request_state_sha256", None)

    @cached_property
    def request_state_sha256(self) -> str:
        """The SHA-256 (hex) of the requestState, "" without one: what the audit trail and
        the logs know it by. Worked out from the state (which this reads, and decrypts); the
        round_parked event keeps it, so lists read it from there instead."""
        return state_sha256(self.request_state if self.has_request_state else None)

    @staticmethod
    def summary_of(requests: Any) -> str:
        """The messages of ``requests`` (inputRequests), one a line, for search."""
        return summary(read_questions(requests))

    @staticmethod
    def questions_of(requests: Any) -> list[dict[str, Any]]:
        """Each request of ``requests`` (inputRequests) as the audit trail lists it: its key,
        method, mode and message."""
        return [
            {"key": q.key, "method": q.method, "mode": q.mode, "message": q.message}
            for q in read_questions(requests)
        ]

    def questions(self) -> tuple[Question, ...]:
        """The input requests as typed questions, in the order the server sent them (read
        once per round object; see ``mrtrweb.elicitation.questions``)."""
        cached = self.__dict__.get("_questions")
        if cached is None or cached[0] is not self.input_requests:
            cached = (self.input_requests, read_questions(self.input_requests))
            self.__dict__["_questions"] = cached
        return cached[1]
