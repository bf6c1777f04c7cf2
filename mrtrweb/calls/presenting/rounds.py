"""A round as a person sees it: the one presenter every reader of a round uses.

Built on the round's typed questions (``Round.questions()``), never on its JSON:

- ``present(round).sections``: each question as the round page shows it, with the limits of
  one page applied (``MAX_QUESTIONS``, and the fields and options a form may have), and what
  can be answered; the JSON API answers the same sections;
- ``RoundAnswers``: those sections with their forms, for the round page;
- ``round_view``, ``round_views``: each question with the answer given, for the call page
  (a round its reader may not read: its status only);
- ``present(round).headline``: one line for lists (the inbox, the admins' pages) and emails;
- ``typed_values``: what a person typed into a round's form, as they would read it back;
- ``renewal_state``, ``changes_said``: what the renewal policy did to a round, in words;
- ``person_name``: a person as others read them.

The approval policies' side of a round (a quorum's proposal and votes, the comments
answerers left, each policy's state as short labels) is ``policies``; what came of
a call (its outcome as one badge, why it expired) is ``outcome_badges``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext as _

from mrtrweb.elicitation import (
    ElicitationForm,
    FormSpec,
    UrlInfo,
    build_form,
    content_from,
    initial_from_content,
    option_index,
    prefix_for_key,
)
from mrtrweb.elicitation.questions import (
    FormQuestion,
    Question,
    UnsupportedQuestion,
    UrlQuestion,
)
from mrtrweb.elicitation.schema import MAX_FIELDS, MAX_FORM_OPTIONS, FieldSpec, Kind

from ..models import Round
from .server_content import answer_value

# At most this many questions in one round are shown (a server's 5,000 took 6 s to render,
# and were more fields than Django accepts in one post, so they could not even be cancelled).
MAX_QUESTIONS = 20
HEADLINE_CHARS = 200


def _too_big(why: str) -> str:
    return _(
        "%(why)s: one page shows at most %(questions)d questions, %(fields)d fields and "
        "%(options)d options in all."
    ) % {
        "why": why,
        "questions": MAX_QUESTIONS,
        "fields": MAX_FIELDS,
        "options": MAX_FORM_OPTIONS,
    }


@dataclass
class Section:
    """One input request of a round, as the round page shows it."""

    key: str
    prefix: str
    method: str
    mode: str  # form, url, invalid (a schema or request we cannot render), unsupported (kind)
    message: str = ""
    spec: FormSpec | None = None  # mode form: the question's classified schema
    form: ElicitationForm | None = None  # mode form, on the round page
    url: UrlInfo | None = None
    consented: bool = False
    error: str = ""

    @property
    def can_open(self) -> bool:
        return self.mode == "url" and self.url is not None and self.url.openable

    @property
    def show_link(self) -> bool:
        return self.can_open and self.consented


@dataclass(frozen=True)
class AnswerItem:
    label: str
    value: str


@dataclass(frozen=True)
class Asked:
    """One question of a round on the call page, with the answer given to it."""

    key: str
    method: str
    mode: str  # form, url, other
    message: str
    url: str = ""
    action: str = ""  # the answer given, "" before one was
    content: tuple[AnswerItem, ...] = ()


@dataclass(frozen=True)
class RoundView:
    round: Any  # the Round (its request_state is never read here or in templates)
    questions: tuple[Asked, ...]
    # Not the reader's to read (another person's round, or a split round they have no part
    # in): the page says it exists and its status, nothing else of it.
    status_only: bool = False


class PresentedRound:
    """A round as a person sees it (read-only; ``RoundAnswers`` adds the forms)."""

    def __init__(self, round: Round) -> None:
        self.round = round
        self.questions: tuple[Question, ...] = round.questions()

    @cached_property
    def first_message(self) -> str:
        """The first message the round asks (trimmed), "" when no question has one."""
        for question in self.questions:
            if question.message.strip():
                return question.message.strip()
        return ""

    @property
    def headline(self) -> str:
        """The first line of the first message, for a one-line summary."""
        first = self.first_message
        return first.splitlines()[0][:HEADLINE_CHARS] if first else ""

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """Each question as the round page shows it. A round with a question we cannot
        render or answer is never half-shown: its section says why."""
        sections: list[Section] = []
        # What one page may show in all, whatever the server asked: beyond it the questions
        # are not rendered, and only Decline or Cancel answer them (see _too_big).
        fields_left, options_left = MAX_FIELDS, MAX_FORM_OPTIONS
        count = len(self.questions)
        for question in self.questions:
            section = Section(
                key=question.key,
                prefix=prefix_for_key(question.key),
                method=question.method,
                mode="invalid",
            )
            sections.append(section)
            if count > MAX_QUESTIONS:
                # Said once, above the first: the page stays small however many there are.
                if len(sections) == 1:
                    section.error = _too_big(
                        _("The server asked %(count)d questions at once") % {"count": count}
                    )
                continue
            section.message = question.message
            if isinstance(question, UnsupportedQuestion):
                if question.malformed:
                    section.error = _("The server sent a malformed question: %(reason)s") % {
                        "reason": question.reason
                    }
                else:
                    section.mode = "unsupported"
                    section.error = question.reason
            elif isinstance(question, UrlQuestion):
                section.mode = "url"
                section.url = question.info
            elif question.spec is None:
                section.error = _("This question uses a form mrtrweb cannot show: %(problem)s") % {
                    "problem": question.problem
                }
            else:
                spec = question.spec
                fields_left -= len(spec)
                options_left -= sum(len(field.options) for field in spec)
                if fields_left < 0 or options_left < 0:
                    section.error = _too_big(_("With this question the round asks too much"))
                    continue
                section.mode = "form"
                section.spec = spec
        return tuple(sections)

    @property
    def unsupported(self) -> bool:
        """Whether the round asks for something this client cannot answer at all."""
        return bool(self.round.unsupported_reason) or any(
            s.mode == "unsupported" for s in self.sections
        )

    @cached_property
    def asked(self) -> tuple[Asked, ...]:
        """Every question with the answer given to it, for the call page."""
        answers = self.round.answers if isinstance(self.round.answers, Mapping) else {}
        return tuple(asked_with(question, answers.get(question.key)) for question in self.questions)


def present(round: Round) -> PresentedRound:
    return PresentedRound(round)


def round_view(round: Round) -> RoundView:
    """The questions of a round with the answers given to them, for the call page."""
    return RoundView(round=round, questions=present(round).asked)


def round_views(rounds: Sequence[Round], read: Mapping[int, Round | None]) -> list[RoundView]:
    """``rounds`` for the call page as its reader may read them (``access.readings``: each
    round whole, narrowed to their part, or None for its status only)."""
    views = []
    for r in rounds:
        shown = read.get(r.pk)
        views.append(
            RoundView(round=r, questions=(), status_only=True)
            if shown is None
            else round_view(shown)
        )
    return views


def asked_with(question: Question, answer: Any) -> Asked:
    """``question`` with ``answer`` (a stored answer: action and content) by its labels."""
    answer = answer if isinstance(answer, Mapping) else {}
    content = answer.get("content")
    fields: dict[str, FieldSpec] = {}
    if isinstance(question, FormQuestion) and question.spec is not None:
        fields = {f.prop: f for f in question.spec}
    if isinstance(question, UnsupportedQuestion):
        mode = question.mode if question.mode in ("form", "url") else "other"
        url = question.url if mode == "url" else ""
    else:
        mode = question.mode
        url = question.url if isinstance(question, UrlQuestion) else ""
    action = answer.get("action")
    return Asked(
        key=question.key,
        method=question.method,
        mode=mode,
        message=question.message,
        url=url,
        action=action if isinstance(action, str) else "",
        content=tuple(
            AnswerItem(
                label=fields[name].label if name in fields else name,
                value=labelled_value(fields.get(name), value),
            )
            for name, value in content.items()
        )
        if isinstance(content, Mapping)
        else (),
    )


class RoundAnswers:
    """Every input request of a round as sections of one form, and the answers out of them.

    ``consented`` holds the prefixes of URL-mode requests the person agreed to open.
    A round with a request we cannot render or answer is never half-rendered: the sections
    say why, and only Decline/Cancel (or Abandon, for kinds we did not declare) remain.
    """

    def __init__(
        self,
        round: Round,
        *,
        data: Mapping[str, Any] | None = None,
        saved: Mapping[str, Mapping[str, Any]] | None = None,
        consented: frozenset[str] | set[str] = frozenset(),
        tz: dt.tzinfo | None = None,
    ) -> None:
        self.round = round
        self.presented = present(round)
        saved = saved or {}
        self.sections: list[Section] = []
        for shown in self.presented.sections:
            section = replace(shown)
            if section.mode == "url":
                section.consented = section.prefix in consented
            elif section.spec is not None:
                initial = (
                    initial_from_content(section.spec, saved[section.key])
                    if section.key in saved
                    else None
                )
                section.form = build_form(
                    section.spec, prefix=section.prefix, data=data, initial=initial, tz=tz
                )
            self.sections.append(section)

    @property
    def unsupported(self) -> bool:
        return self.presented.unsupported

    @property
    def answerable(self) -> bool:
        """Whether Decline/Cancel can be sent at all."""
        return self.round.is_pending and not self.unsupported

    @property
    def renderable(self) -> bool:
        return all(s.mode in ("form", "url") for s in self.sections)

    @property
    def awaiting_consent(self) -> list[Section]:
        return [s for s in self.sections if s.mode == "url" and not s.consented]

    @property
    def can_accept(self) -> bool:
        return (
            self.answerable
            and self.renderable
            and all(s.can_open and s.consented for s in self.sections if s.mode == "url")
        )

    @property
    def has_forms(self) -> bool:
        return any(s.mode == "form" for s in self.sections)

    @property
    def accept_label(self) -> str:
        return _("Submit") if self.has_forms else _("I've finished")

    def section_for_prefix(self, prefix: str) -> Section | None:
        for section in self.sections:
            if section.prefix == prefix:
                return section
        return None

    def is_valid(self) -> bool:
        # Validate every form (not just up to the first bad one) so all errors show at once.
        results = [s.form.is_valid() for s in self.sections if s.form is not None]
        return self.can_accept and all(results)

    def quiet(self) -> None:
        """Keep typed values but show no errors (after a consent click, say)."""
        for section in self.sections:
            if section.form is not None and section.form.is_bound:
                section.form.errors.clear()

    def accepted(self) -> dict[str, dict[str, Any]]:
        responses: dict[str, dict[str, Any]] = {}
        for section in self.sections:
            if section.form is not None:
                responses[section.key] = {
                    "action": "accept",
                    "content": dict(content_from(section.form)),
                }
            else:
                responses[section.key] = {"action": "accept"}
        return responses

    def refused(self, action: str) -> dict[str, dict[str, Any]]:
        """Decline or cancel sends no content, for every key."""
        return {section.key: {"action": action} for section in self.sections}


# -- answers as people chose them ------------------------------------------------------------


def labelled_value(field: FieldSpec | None, value: Any) -> str:
    """An answer as the person saw it when choosing: an option's title ("Operations"), not its
    code ("ops"); values that match no option (or a field we do not know) as they are."""
    if field is None or not field.options:
        return answer_value(value)
    labels = {option.value: option.label for option in field.options}
    if isinstance(value, list):
        return ", ".join(labels.get(v, answer_value(v)) for v in value) or _("(none)")
    return labels.get(value, answer_value(value)) if isinstance(value, str) else answer_value(value)


@dataclass(frozen=True)
class TypedQuestion:
    message: str
    items: tuple[AnswerItem, ...]


def typed_values(answers: RoundAnswers) -> tuple[TypedQuestion, ...]:
    """What was typed into ``answers``' forms (bound to a post), field by field, as the person
    reads it back: labels for choices, every value kept, valid or not, nothing dropped."""
    typed: list[TypedQuestion] = []
    for section in answers.sections:
        form = section.form
        if form is None or not form.is_bound or section.spec is None:
            continue
        items = []
        for spec in section.spec:
            shown = _typed(spec, form, form.add_prefix(spec.field_name))
            if shown:
                items.append(AnswerItem(label=spec.label, value=shown))
        if items:
            typed.append(TypedQuestion(message=section.message, items=tuple(items)))
    return tuple(typed)


def _typed(spec: FieldSpec, form: ElicitationForm, name: str) -> str:
    data = form.data
    if spec.kind == Kind.BOOLEAN:
        return "yes" if data.get(name) not in (None, "", "false", "off") else "no"
    raw = data.getlist(name) if hasattr(data, "getlist") else [data.get(name)]
    values = [str(v) for v in raw if v not in (None, "")]
    if spec.options:
        # The page posts option indices: read them back as the options' titles.
        labels = []
        for v in values:
            index = option_index(spec, v)
            labels.append(spec.options[index].label if index is not None else v)
        values = labels
    return ", ".join(values)


# -- the renewal policy -----------------------------------------------------------------------


@dataclass(frozen=True)
class RenewalState:
    """What the renewal policy did to a round: how often its server state was renewed, and
    whether the server's questions changed (the round was then asked again, as a new one)."""

    renewals: int
    changed: bool

    @property
    def label(self) -> str:
        if self.changed:
            return gettext("questions changed: asked again")
        return ngettext("renewed %(count)d time", "renewed %(count)d times", self.renewals) % {
            "count": self.renewals
        }


def renewal_state(round: Round) -> RenewalState | None:
    """The dashboard's note on a round the renewal policy touched; None for the others."""
    changed = round.status == Round.Status.CHANGED
    if not round.renewals and not changed:
        return None
    return RenewalState(round.renewals, changed)


def changes_said(changes: Any) -> list[str]:
    """What changed since a round was first asked (``Round.changes``), one line a question,
    for the person asked again. The server's messages stay plain text (the page escapes)."""
    said = {
        "added": gettext("New question: %(message)s"),
        "removed": gettext("No longer asked: %(was)s"),
        "message": gettext("Now reads: %(message)s (was: %(was)s)"),
        "schema": gettext("The answer it takes changed: %(message)s"),
        "kind": gettext("Asked another way: %(message)s"),
    }
    lines = []
    for change in changes if isinstance(changes, list) else ():
        if not isinstance(change, Mapping) or change.get("change") not in said:
            continue
        values = {
            "message": str(change.get("message") or change.get("key") or ""),
            "was": str(change.get("was") or change.get("key") or ""),
        }
        lines.append(said[str(change["change"])] % values)
    return lines


# -- people ---------------------------------------------------------------------------------


def person_name(user: User | None) -> str:
    """A person as others read them: their full name, else their username ("" for nobody)."""
    if user is None:
        return ""
    full = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    return full or str(user.get_username())
