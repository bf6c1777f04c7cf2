"""A program's answers to a round, validated exactly as the round page validates a person's.

The answers go through the very forms the page builds (:class:`mrtrweb.calls.forms.RoundAnswers`
and the elicitation fields behind it): each JSON value is first held to the schema by
``value_problem`` (the one place the constraints are judged), then written as the form data a
browser would post and cleaned by the same fields, and the content sent is ``content_from``
those forms. So a value the page would refuse is refused here, with the same message, and a
value it would normalise (trimmed text, a date-time with seconds) is normalised the same way.

What JSON can say that a form cannot: a property left out. A required property left out is
"This field is required." (a form cannot tell an unticked box from a missing one, JSON can).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from mrtrweb.calls.forms import RoundAnswers, Section
from mrtrweb.calls.models import Round
from mrtrweb.elicitation import (
    FormSpec,
    Kind,
    content_from,
    prop_for_field_name,
    value_problem,
)

from .problems import ApiError, pointer
from .schemas import Answer, ProblemField

REQUIRED = "This field is required."


def _form_data(
    spec: FormSpec, prefix: str, content: Mapping[str, Any], where: tuple[Any, ...]
) -> tuple[dict[str, Any], list[ProblemField]]:
    """``content`` as the form data a browser would post, or what is wrong with it."""
    data: dict[str, Any] = {}
    problems: list[ProblemField] = []
    known = {field.prop for field in spec}
    for prop in content:
        if prop not in known:
            problems.append(
                ProblemField(
                    detail="The question has no such field.", pointer=pointer(*where, prop)
                )
            )
    for field in spec:
        name = f"{prefix}-{field.field_name}"
        value = content.get(field.prop)
        if value is None:  # absent, or null: no answer
            if field.required:
                problems.append(ProblemField(detail=REQUIRED, pointer=pointer(*where, field.prop)))
            continue
        problem = value_problem(field, value)
        if problem is not None:
            problems.append(ProblemField(detail=problem, pointer=pointer(*where, field.prop)))
            continue
        if field.kind is Kind.BOOLEAN:
            if value:
                data[name] = "on"
        elif field.kind in (Kind.INTEGER, Kind.NUMBER):
            data[name] = repr(value) if isinstance(value, float) else str(value)
        elif field.kind is Kind.SINGLE_SELECT:
            data[name] = str(field.option_values().index(value))
        elif field.kind is Kind.MULTI_SELECT:
            data[name] = [str(field.option_values().index(item)) for item in value]
        else:
            data[name] = value
    return data, problems


def _check_keys(round: Round, responses: Mapping[str, Answer]) -> list[ProblemField]:
    problems = []
    for key in responses:
        if key not in round.input_requests:
            problems.append(
                ProblemField(
                    detail="The round has no input request with this key.",
                    pointer=pointer("responses", key),
                )
            )
    for key in round.input_requests:
        if key not in responses:
            problems.append(
                ProblemField(
                    detail="Answer every input request of the round (accept, decline or cancel).",
                    pointer=pointer("responses", key),
                )
            )
    return problems


def _check_accept(section: Section, answer: Answer) -> list[ProblemField]:
    where = pointer("responses", section.key)
    if section.mode == "url":
        if answer.content is not None:
            return [
                ProblemField(
                    detail="A URL-mode request is accepted without content.",
                    pointer=where + "/content",
                )
            ]
        if not section.can_open:
            return [
                ProblemField(
                    detail="This URL is not safe to open, so it cannot be accepted; "
                    "decline or cancel it.",
                    pointer=where + "/action",
                )
            ]
        return []
    if section.mode != "form":
        return [ProblemField(detail=section.error or "Cannot be accepted.", pointer=where)]
    if answer.content is None:
        return [ProblemField(detail="Accepting a form needs content.", pointer=where + "/content")]
    return []


def validated_responses(round: Round, responses: Mapping[str, Answer]) -> dict[str, dict[str, Any]]:
    """The ``inputResponses`` to store for ``responses``, or a 409/422 :class:`ApiError`."""
    sections = RoundAnswers(round, tz=timezone.get_current_timezone())
    if sections.unsupported:
        raise ApiError(
            409,
            round.unsupported_reason or "The round asks for something this client cannot answer.",
            kind="unanswerable",
        )
    problems = _check_keys(round, responses)
    data: dict[str, Any] = {}
    for section in sections.sections:
        answer = responses.get(section.key)
        if answer is None:
            continue
        if answer.action != "accept":
            if answer.content is not None:
                problems.append(
                    ProblemField(
                        detail="Only accept carries content.",
                        pointer=pointer("responses", section.key, "content"),
                    )
                )
            continue
        found = _check_accept(section, answer)
        problems += found
        if not found and section.form is not None:
            more, wrong = _form_data(
                section.form.spec,
                section.prefix,
                answer.content or {},
                ("responses", section.key, "content"),
            )
            data.update(more)
            problems += wrong
    if problems:
        raise ApiError(422, "Some answers are not valid.", kind="invalid-answers", errors=problems)

    # The program presents URLs itself, so every URL request counts as consented to.
    consented = frozenset(s.prefix for s in sections.sections if s.mode == "url")
    bound = RoundAnswers(round, data=data, consented=consented, tz=timezone.get_current_timezone())
    result: dict[str, dict[str, Any]] = {}
    for section in bound.sections:
        answer = responses[section.key]
        if answer.action != "accept":
            result[section.key] = {"action": answer.action}
            continue
        if section.form is None:
            result[section.key] = {"action": "accept"}
            continue
        if not section.form.is_valid():
            problems += _form_errors(section)
            continue
        # What RoundAnswers.accepted() makes of a section, for this one key.
        result[section.key] = {"action": "accept", "content": dict(content_from(section.form))}
    if problems:
        raise ApiError(422, "Some answers are not valid.", kind="invalid-answers", errors=problems)
    return result


def _form_errors(section: Section) -> list[ProblemField]:
    assert section.form is not None
    problems = []
    for name, messages in section.form.errors.items():
        try:
            where = pointer("responses", section.key, "content", prop_for_field_name(name))
        except ValueError:
            where = pointer("responses", section.key, "content")
        problems += [ProblemField(detail=str(m), pointer=where) for m in messages]
    return problems
