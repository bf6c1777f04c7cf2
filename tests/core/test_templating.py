"""Pages always encode: a lone surrogate a server sent shows as U+FFFD instead of a 500.

Found by the fuzz suite (tests/fuzz/): JSON may carry ``"\\ud800"``, ``json.loads`` keeps it,
and a round whose message or field title held one failed as the response was encoded.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.template import engines
from django.test import RequestFactory
from django.utils.safestring import SafeString

from mrtrweb.calls.pages.views import _render_round
from mrtrweb.calls.presenting.rounds import RoundAnswers
from mrtrweb.core.templating import well_formed
from tests.dashboard.support import make_connection, make_end_user, make_round

LONE = "\ud800"


def test_the_engine_replaces_lone_surrogates_and_keeps_output_safe():
    template = engines["django"].from_string("<p>{{ text }}</p>")
    out = template.render({"text": f"a{LONE}<b>\udfff"})
    assert out == "<p>a\ufffd&lt;b&gt;\ufffd</p>"
    assert isinstance(out, SafeString)
    out.encode("utf-8")


def test_well_formed_text_is_returned_as_it_is():
    text = "plain \U0001f600 text"
    assert well_formed(text) is text


@pytest.mark.django_db
def test_a_round_page_with_lone_surrogates_in_the_question_renders(settings: Any):
    person = make_end_user("eve")
    round = make_round(connection=make_connection(), starter=person)
    # Kept in memory: PostgreSQL would refuse to store it, SQLite stores it as a server sent it.
    round.input_requests = {
        f"ask{LONE}": {
            "method": "elicitation/create",
            "params": {
                "message": f"Which one{LONE}?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        f"pick{LONE}": {
                            "type": "string",
                            "title": f"Pick{LONE}",
                            "enum": [f"a{LONE}", "b"],
                            "default": f"a{LONE}",
                        },
                        "note": {"type": "string", "default": f"n{LONE}"},
                    },
                },
            },
        }
    }
    request = RequestFactory().get(round.get_absolute_url())
    request.user = person
    response = _render_round(request, round, RoundAnswers(round))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Which one\ufffd?" in html
    assert "Pick\ufffd" in html
    assert 'value="n\ufffd"' in html
