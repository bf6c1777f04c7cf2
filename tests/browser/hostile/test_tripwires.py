"""The tripwires themselves fire: a page carrying everything they look for is caught on each.

Without this, a hostile test could pass because a tripwire never looks.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LiveApp, _new_page
from tests.browser.hostile.conftest import SECRETS
from tests.browser.hostile.tripwires import Tripwires

pytestmark = pytest.mark.browser

BREACHED = """
<p>{secret}</p>
<b data-pwn="x">injected</b>
<img src="http://127.0.0.1:9/canary/self-test.png" onerror="window.__pwned='img'">
<a href="javascript:void(0)">js</a>
<iframe srcdoc="<p>x</p>"></iframe>
<form action="http://127.0.0.1:9/steal"><input type="password" name="pw"></form>
<script>window.__pwned = 'script'; alert('pwned');</script>
<p>Server: <strong>\u202eevil</strong> at <span>https://example.org</span></p>
"""


def test_each_tripwire_fires(browser: Any, hostile_app: LiveApp) -> None:
    page = _new_page(browser, hostile_app)
    try:
        wires = Tripwires(page=page, origin=hostile_app.base_url, secrets=SECRETS)
        page.goto("/healthz")
        page.set_content(BREACHED.format(secret=SECRETS[0]))
        wires.inspect("a breached page")
        found = "\n".join(wires.problems)
        for expected in (
            "dialog opened",
            "injected script ran",
            "an element injected from server text",
            "an on* event handler attribute",
            "a link that is not http(s)",
            "a frame, embed, base or refresh element",
            "a password field",
            "a form posting off-site",
            "the page shows the secret",
            "text reordered by a server's bidi controls",
            "the browser requested http://127.0.0.1:9/canary/self-test.png",
        ):
            assert expected in found, f"{expected!r} was not caught; caught:\n{found}"
        wires.reset()
        assert wires.problems == []
    finally:
        page.context.close()
