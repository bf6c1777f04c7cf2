"""A program's answers to a round, validated as the round page validates a person's.

The round is read through the same presenter as its page
(:func:`mrtrweb.calls.presenting.rounds.present`: the same sections, the same limits, the same
URL checks), and each accepted form's JSON content goes straight to
``elicitation.clean_content``, the step the page's form fields end with. So a value the page
would refuse is refused here, with the same message, and a value it would normalise (trimmed
text, a date-time with whole seconds, an integral number, a multi-select in option order) is
normalised the same way.

What JSON can say that a form cannot: a property left out. A required property left out is
"This field is required." (a form cannot tell an unticked box from a missing one, JSON can).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mrtrweb.calls.models import Round
from mrtrweb.calls.presenting.rounds import Section, present
from mrtrweb.elicitation import InvalidContent, clean_content

from .problems import ApiError, pointer
from .schemas import Answer, ProblemField


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
    presented = present(round)
    if presented.unsupported:
        raise ApiError(
            409,
            round.unsupported_reason or "The round asks for something this client cannot answer.",
            kind="unanswerable",
        )
    problems = _check_keys(round, responses)
    result: dict[str, dict[str, Any]] = {}
    for section in presented.sections:
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
            result[section.key] = {"action": answer.action}
            continue
        found = _check_accept(section, answer)
        problems += found
        if found:
            continue
        if section.spec is None:  # a URL-mode request: the program presents it itself
            result[section.key] = {"action": "accept"}
            continue
        try:
            content = clean_content(section.spec, answer.content or {})
        except InvalidContent as exc:
            problems += [
                ProblemField(
                    detail=p.message, pointer=pointer("responses", section.key, "content", p.prop)
                )
                for p in exc.problems
            ]
            continue
        result[section.key] = {"action": "accept", "content": content}
    if problems:
        raise ApiError(422, "Some answers are not valid.", kind="invalid-answers", errors=problems)
    return result
