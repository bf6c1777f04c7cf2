"""read_questions(): a round's stored inputRequests as typed questions, whatever was stored."""

from __future__ import annotations

from mrtrweb.elicitation.questions import (
    FormQuestion,
    UnsupportedQuestion,
    UrlQuestion,
    read_questions,
    summary,
)

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "title": "How many"}}}


def elicit(**params: object) -> dict[str, object]:
    return {"method": "elicitation/create", "params": params}


def test_each_request_becomes_one_typed_question_in_the_servers_order() -> None:
    questions = read_questions(
        {
            "form": elicit(message="Count?", requestedSchema=SCHEMA),
            "url": elicit(
                mode="url", message="Sign in", url="https://example.com/a", elicitationId="e"
            ),
            "sample": {"method": "sampling/createMessage", "params": {"messages": []}},
        }
    )
    form, url, sample = questions
    assert isinstance(form, FormQuestion) and form.message == "Count?" and form.mode == "form"
    assert form.spec is not None and form.spec.field("n").label == "How many"
    assert isinstance(url, UrlQuestion) and url.info.host == "example.com"
    assert isinstance(sample, UnsupportedQuestion) and not sample.malformed
    assert sample.method == "sampling/createMessage"
    assert "sampling/createMessage" in sample.reason


def test_a_schema_outside_the_vocabulary_is_kept_with_its_problem() -> None:
    (question,) = read_questions(
        {
            "k": elicit(
                message="Nested",
                requestedSchema={"type": "object", "properties": {"o": {"type": "object"}}},
            )
        }
    )
    assert isinstance(question, FormQuestion)
    assert question.spec is None and "nested objects" in str(question.problem)


def test_a_malformed_elicitation_keeps_what_can_be_read() -> None:
    (question,) = read_questions({"k": elicit(mode="url", message="Open", url=5)})
    assert isinstance(question, UnsupportedQuestion) and question.malformed
    assert (question.method, question.mode, question.message) == (
        "elicitation/create",
        "url",
        "Open",
    )
    assert question.reason


def test_junk_never_raises() -> None:
    assert read_questions(None) == () and read_questions([1]) == ()
    questions = read_questions({"a": 1, "b": {"method": 7, "params": "x"}, "c": {}})
    assert all(isinstance(q, UnsupportedQuestion) and q.message == "" for q in questions)
    assert [q.method for q in questions] == ["", "", ""]


def test_summary_lists_the_messages_one_a_line() -> None:
    questions = read_questions(
        {
            "a": elicit(message=" First ", requestedSchema=SCHEMA),
            "b": elicit(message="  "),
            "c": elicit(message="Third"),
        }
    )
    assert summary(questions) == "First\nThird"
