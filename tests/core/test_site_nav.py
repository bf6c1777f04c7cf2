"""The header menu's links (``{% nav_url %}``, mrtrweb/core/templatetags/site_nav.py): what
``{% url %}`` gives, reversed once per URL configuration and script prefix."""

from __future__ import annotations

from typing import Any

import pytest
from django.template import Context, Template
from django.test import override_settings
from django.urls import clear_script_prefix, reverse, set_script_prefix

from mrtrweb.core.templatetags import site_nav
from tests.support.factories import make_user

MENU = (
    "core:home",
    "inbox:index",
    "calls:list",
    "starting:pick",
    "tokens:list",
    "authorizations:accounts",
    "account:settings",
    "accounts:two_step",
    "admin:index",
    "logout",
    "login",
)


def render(source: str) -> str:
    return Template("{% load site_nav %}" + source).render(Context({}))


def test_each_link_is_what_url_gives() -> None:
    for name in MENU:
        assert render(f"{{% nav_url '{name}' %}}") == render(f"{{% url '{name}' %}}")
        assert render(f"{{% nav_url '{name}' as link %}}{{{{ link }}}}") == reverse(name)


def test_a_name_that_is_not_installed_gives_nothing_as_url_as_does() -> None:
    assert render("{% nav_url 'nowhere:at-all' as link %}[{{ link }}]") == "[]"
    assert render("{% nav_url 'nowhere:at-all' %}") == ""


def test_it_is_reversed_once_then_remembered(monkeypatch: Any) -> None:
    reversed_names: list[str] = []

    def counting(name: str) -> str:
        reversed_names.append(name)
        return reverse(name)

    monkeypatch.setattr(site_nav, "reverse", counting)
    site_nav._links.clear()  # whatever earlier tests had remembered
    with override_settings(ROOT_URLCONF="tests.core.error_urls"):
        first = [render("{% nav_url 'calls:list' %}") for _ in range(3)]
    assert first == [reverse("calls:list")] * 3
    assert reversed_names == ["calls:list"]


def test_a_script_prefix_of_its_own_gets_its_own_links() -> None:
    """Served under a path (``FORCE_SCRIPT_NAME``, a proxy's ``SCRIPT_NAME``), the links
    carry it; the same process serving at the root keeps its own."""
    at_root = render("{% nav_url 'inbox:index' %}")
    set_script_prefix("/mrtr/")
    try:
        under = render("{% nav_url 'inbox:index' %}")
    finally:
        clear_script_prefix()
    assert under == "/mrtr" + at_root
    assert render("{% nav_url 'inbox:index' %}") == at_root


def test_a_changed_url_configuration_is_not_answered_from_the_old_one() -> None:
    before = render("{% nav_url 'core:home' %}")
    with override_settings(ROOT_URLCONF="tests.core.nav_urls"):
        assert render("{% nav_url 'core:home' %}") == "/elsewhere/"
    assert render("{% nav_url 'core:home' %}") == before


@pytest.mark.django_db
def test_the_menu_of_a_signed_in_page_links_where_it_did(client: Any) -> None:
    client.force_login(make_user("nav-reader"))
    html = client.get(reverse("inbox:index")).content.decode()
    for name in ("core:home", "calls:list", "starting:pick", "tokens:list", "account:settings"):
        assert f'href="{reverse(name)}"' in html
    assert f'action="{reverse("logout")}"' in html
    assert 'href="/inbox/" aria-current="page"' in html
