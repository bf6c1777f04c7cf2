"""The site in German: the translation is complete and compiled, pages follow the browser or the
account page, and emails follow their recipient (language and time zone), not the sender.

The pages are real: rounds come from the in-process fastmcp peer through the engine, as in
tests/inbox. English stays the default (LANGUAGE_CODE), which every other test relies on.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polib
import pytest
from django.conf import settings
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import translation

from mrtrweb.accounts.models import Preferences
from mrtrweb.calls.models import Call
from mrtrweb.people.when import moment, relative
from tests.inbox.support import answer_data, ask, browser, person, to_user, visible_text
from tests.support.factories import make_connection

LOCALE = Path(settings.BASE_DIR) / "locale"
PO = LOCALE / "de" / "LC_MESSAGES" / "django.po"
MO = LOCALE / "de" / "LC_MESSAGES" / "django.mo"
# What makemessages reads: the project's own code and templates (docs/development.md).
MAKEMESSAGES_IGNORE = [".venv", "var", "staticfiles", "tests", "bench", "docs", "node_modules"]
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")
GERMAN = {"HTTP_ACCEPT_LANGUAGE": "de-DE,de;q=0.9,en;q=0.5"}
NOW = dt.datetime(2026, 12, 2, 7, 21, 30, tzinfo=dt.UTC)


def entries(catalog: Any) -> dict[tuple[str | None, str], Any]:
    """(context, msgid) -> msgstr (or the plural forms), without the header."""
    return {
        (e.msgctxt, e.msgid): (
            tuple(sorted(e.msgstr_plural.items())) if e.msgid_plural else e.msgstr
        )
        for e in catalog
        if e.msgid
    }


# -- the catalog ------------------------------------------------------------------------------


def test_every_message_has_a_german_translation_with_the_same_placeholders() -> None:
    po = polib.pofile(str(PO))
    assert len(po) > 500
    assert not po.metadata_is_fuzzy
    untranslated = [e.msgid for e in po.untranslated_entries()]
    fuzzy = [e.msgid for e in po.fuzzy_entries()]
    assert untranslated == [] and fuzzy == []
    assert [e.msgid for e in po.obsolete_entries()] == []
    for e in po:
        forms = (
            [(e.msgid, e.msgstr_plural[0]), (e.msgid_plural, e.msgstr_plural[1])]
            if e.msgid_plural
            else [(e.msgid, e.msgstr)]
        )
        for source, german in forms:
            assert set(PLACEHOLDER.findall(source)) == set(PLACEHOLDER.findall(german)), e.msgid
            assert source.count("<") == german.count("<"), e.msgid  # the same markup


def test_the_committed_mo_is_compiled_from_the_po() -> None:
    """A fresh clone needs no gettext: the .mo is committed, and must say what the .po says
    (compile it again with `manage.py compilemessages -l de --ignore=.venv`)."""
    assert MO.is_file()
    assert entries(polib.mofile(str(MO))) == entries(polib.pofile(str(PO)))


@pytest.mark.skipif(
    shutil.which("xgettext") is None,
    reason="GNU gettext (xgettext) is not installed; .ci/run installs it so CI always checks",
)
def test_makemessages_finds_no_message_missing_from_the_po(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """Every marked string of the code and templates is in the .po (run makemessages into a
    copy, in a tree that sees the same files)."""
    copy = tmp_path / "locale"
    shutil.copytree(LOCALE, copy)
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("mrtrweb", "templates"):
        os.symlink(Path(settings.BASE_DIR) / name, tree / name)
    settings.LOCALE_PATHS = [copy]
    monkeypatch.chdir(tree)
    call_command(
        "makemessages",
        locale=["de"],
        symlinks=True,
        ignore_patterns=MAKEMESSAGES_IGNORE,
        no_location=True,
        no_obsolete=True,
        verbosity=0,
    )
    fresh = polib.pofile(str(copy / "de" / "LC_MESSAGES" / "django.po"))
    ours = polib.pofile(str(PO))
    missing = sorted(set(entries(fresh)) - set(entries(ours)))
    unused = sorted(set(entries(ours)) - set(entries(fresh)))
    assert missing == [], "run: manage.py makemessages -l de (docs/development.md)"
    assert unused == [], "strings no longer in the code: makemessages --no-obsolete drops them"


# -- words and dates --------------------------------------------------------------------------


def test_relative_times_and_dates_in_german() -> None:
    with translation.override("de"):
        assert relative(NOW, NOW) == "gerade eben"
        assert relative(NOW + dt.timedelta(minutes=8, seconds=10), NOW) == "in 8 Minuten"
        assert relative(NOW - dt.timedelta(days=3), NOW) == "vor 3 Tagen"
        assert relative(NOW - dt.timedelta(minutes=1, seconds=5), NOW) == "vor 1 Minute"
        shown = moment(NOW + dt.timedelta(minutes=8), NOW, ZoneInfo("Europe/Berlin"))
        assert shown.both == "in 8 Minuten — 2. Dez, 08:29"
        assert shown.full == "2. Dez 2026, 08:29 (Europe/Berlin)"
    # English is untouched.
    assert relative(NOW - dt.timedelta(days=3), NOW) == "3 days ago"


# -- pages ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sign_in_and_error_pages_follow_the_browsers_language() -> None:
    web = Client()
    page = web.get(reverse("login"), **GERMAN)
    html = page.content.decode()
    assert page.status_code == 200 and page["Content-Language"] == "de"
    assert '<html lang="de">' in html
    assert "Passwort vergessen?" in html and ">Anmelden</button>" in html

    missing = web.get("/no/such/page/", **GERMAN)
    assert missing.status_code == 404
    assert "Diese Seite gibt es hier nicht" in visible_text(missing)
    assert "Zur Startseite" in visible_text(missing)

    english = Client().get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")
    assert '<html lang="en">' in english.content.decode()
    assert "Forgot your password?" in english.content.decode()


@pytest.mark.django_db(transaction=True)  # answers are delivered after the commit
def test_the_round_the_inbox_and_the_call_page_with_its_badge_in_german(
    fastmcp_peer: Any, inline_tasks: None
) -> None:
    ada = person("ada")
    round = ask(make_connection(fastmcp_peer, "demo"), ada, service="api")
    web = browser(ada)

    asked = visible_text(web.get(round.get_absolute_url(), **GERMAN))
    assert "Der Server braucht Ihre Eingabe" in asked
    assert "Gefragt von ada gerade eben" in asked
    assert "Werkzeug approve_deploy auf demo" in asked
    assert re.search(r"Fällig in (9|10) Minuten — \d+\. \w{3}, \d\d:\d\d UTC", asked), asked
    assert "Absenden" in asked and "Ablehnen" in asked

    inbox = visible_text(web.get(reverse("inbox:index"), **GERMAN))
    assert "Posteingang" in inbox and "Wartet auf mich" in inbox
    assert "1 wartet auf Sie oder Ihre Gruppen" in inbox
    assert "Werkzeug approve_deploy auf demo" in inbox

    posted = web.post(round.get_absolute_url(), answer_data(action="decline"), **GERMAN)
    assert posted.status_code == 303
    call = Call.objects.get(pk=round.call_id)
    shown = web.get(call.get_absolute_url(), **GERMAN)
    html = shown.content.decode()
    assert "outcome-declined" in html
    assert re.search(r'class="badge outcome outcome-declined[^"]*">Abgelehnt<', html)
    crumbs = re.search(r'<p class="crumbs">(.*?)</p>', html, re.S)
    assert crumbs and "Meine Aufrufe" in crumbs[1] and f"Aufruf {call.pk}" in crumbs[1]


@pytest.mark.django_db
def test_the_account_page_language_wins_over_the_browser_and_sets_the_cookie() -> None:
    bea = person("bea")
    web = browser(bea)
    english = {"HTTP_ACCEPT_LANGUAGE": "en"}

    form = web.get(reverse("account:settings"), **english).content.decode()
    assert 'name="language"' in form and "Deutsch" in form  # each language named in itself

    saved = web.post(reverse("account:settings"), {"language": "de"}, **english)
    assert saved.status_code == 303
    assert saved.cookies[settings.LANGUAGE_COOKIE_NAME].value == "de"
    assert Preferences.objects.get(user=bea).language == "de"

    # A browser that asks for English still gets German, in this session and the next.
    assert "Die Seiten werden jetzt auf Deutsch angezeigt." in visible_text(
        web.get(reverse("account:settings"), **english)
    )
    page = web.get(reverse("inbox:index"), **english)
    assert '<html lang="de">' in page.content.decode()
    assert "Nichts wartet auf Sie." in visible_text(page)
    again = browser(bea)
    assert "Posteingang" in visible_text(again.get(reverse("inbox:index"), **english))

    # Back to automatic: the browser decides again, and the cookie goes.
    reset = again.post(reverse("account:settings"), {"language": ""}, **english)
    assert reset.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""
    again.cookies.pop(settings.LANGUAGE_COOKIE_NAME, None)
    assert "Inbox" in visible_text(again.get(reverse("inbox:index"), **english))


# -- emails -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_email_speaks_its_recipients_language_and_time_zone_not_the_senders(
    fastmcp_peer: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    carl = person("carl")
    dora = person("dora")
    Preferences.objects.create(user=dora, language="de", time_zone="Europe/Berlin")
    conn = to_user(fastmcp_peer, dora)

    # Started by an English speaker, in an English request.
    with translation.override("en"), django_capture_on_commit_callbacks(execute=True):
        round = ask(conn, carl, service="api")

    (message,) = mail.outbox
    assert message.to == ["dora@example.test"]
    assert message.subject.startswith("[mrtrweb] carl fragt: ")
    # The email says when the call was started, in the recipient's zone.
    started = Call.objects.get(pk=round.call_id).created_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert f"carl hat Werkzeug approve_deploy auf {conn.title or conn.name} gestartet" in (
        message.body
    )
    assert f"{started:%H:%M} Europe/Berlin)" in message.body
    assert "Antworten Sie bis " in message.body and "(10 Minuten nach der Frage)" in message.body
    assert "UTC" not in message.body

    # Someone without preferences is written to in the site's defaults, whoever is reading.
    mail.outbox.clear()
    with translation.override("de"), django_capture_on_commit_callbacks(execute=True):
        ask(to_user(fastmcp_peer, carl, name="to-carl"), dora, service="api")
    (english,) = mail.outbox
    assert "asks:" in english.subject and "Answer before" in english.body
    assert " UTC" in english.body


@pytest.mark.django_db
def test_the_password_reset_email_is_in_the_accounts_language(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    erin = person("erin")
    Preferences.objects.create(user=erin, language="de")

    Client().post(reverse("password_reset"), {"email": "erin@example.test"})

    (message,) = mail.outbox
    assert message.subject == "Neues Passwort für mrtrweb festlegen"
    assert "Hallo erin," in message.body and "Der Link funktioniert einmal" in message.body
