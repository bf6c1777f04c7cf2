"""The signature formats receivers rely on (Standard Webhooks, and X-Mrtr-Signature until
0.3.0), and what the verifiers refuse."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from standardwebhooks import Webhook, WebhookVerificationError

from mrtrweb.webhooks.signing import (
    sign,
    standard_headers,
    standard_secret,
    verify,
    verify_standard,
)

SECRET = "s3cret-per-token"
BODY = b'{"id":"1","type":"call.finished"}'


def test_the_header_is_t_and_v1_hmac_sha256_over_timestamp_dot_body() -> None:
    header = sign(SECRET, BODY, timestamp=1_700_000_000)
    expected = hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert verify(SECRET, header, BODY, now=1_700_000_000)


def test_a_fresh_signature_verifies() -> None:
    assert verify(SECRET, sign(SECRET, BODY), BODY)
    assert verify(SECRET, sign(SECRET, BODY), BODY.decode())


def test_a_tampered_body_fails() -> None:
    header = sign(SECRET, BODY)
    assert not verify(SECRET, header, BODY.replace(b"finished", b"finishes"))
    assert not verify(SECRET, header, BODY + b" ")


def test_a_stale_or_future_timestamp_fails() -> None:
    now = time.time()
    stale = sign(SECRET, BODY, timestamp=int(now) - 301)
    assert not verify(SECRET, stale, BODY, now=now)
    assert verify(SECRET, stale, BODY, tolerance=400, now=now)
    future = sign(SECRET, BODY, timestamp=int(now) + 301)
    assert not verify(SECRET, future, BODY, now=now)


def test_a_retimestamped_signature_fails() -> None:
    # Replaying an old body with a new t= cannot reuse the old MAC.
    old = sign(SECRET, BODY, timestamp=1_700_000_000)
    forged = old.replace("t=1700000000", f"t={int(time.time())}")
    assert not verify(SECRET, forged, BODY)


def test_another_secret_fails() -> None:
    assert not verify("another", sign(SECRET, BODY), BODY)


def test_malformed_headers_fail() -> None:
    good = sign(SECRET, BODY)
    t_part, v_part = good.split(",")
    for header in [
        None,
        "",
        "garbage",
        t_part,
        v_part,
        f"{t_part},{t_part},{v_part}",
        f"t=abc,{v_part}",
        f"{t_part},v1",
        f"{t_part},v0={v_part[3:]}",
    ]:
        assert not verify(SECRET, header, BODY), header


def test_any_of_several_v1_signatures_may_match() -> None:
    t = int(time.time())
    mine = sign(SECRET, BODY, timestamp=t).split(",")[1]
    other = sign("old secret", BODY, timestamp=t).split(",")[1]
    assert verify(SECRET, f"t={t},{other},{mine}", BODY)
    assert not verify(SECRET, f"t={t},{other}", BODY)


# -- Standard Webhooks (standardwebhooks.com), checked with the library receivers use --------


def standard(body: bytes = BODY, message_id: str = "msg-1", t: int | None = None) -> dict:
    return standard_headers(SECRET, message_id, body, t)


def receiver_accepts(headers: dict, body: bytes = BODY, secret: str | None = None) -> bool:
    try:
        Webhook(secret or standard_secret(SECRET)).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


def test_the_standard_secret_is_the_same_key_in_whsec_form() -> None:
    whsec = standard_secret(SECRET)
    assert whsec.startswith("whsec_")
    assert base64.b64decode(whsec.removeprefix("whsec_")) == SECRET.encode()


def test_the_standard_headers_follow_the_spec() -> None:
    headers = standard(t=1_700_000_000)
    assert headers["webhook-id"] == "msg-1" and headers["webhook-timestamp"] == "1700000000"
    mac = hmac.new(SECRET.encode(), b"msg-1.1700000000." + BODY, hashlib.sha256).digest()
    assert headers["webhook-signature"] == "v1," + base64.b64encode(mac).decode()


def test_a_receiver_with_the_standardwebhooks_library_accepts_a_delivery() -> None:
    assert receiver_accepts(standard())
    assert verify_standard(SECRET, standard(), BODY)


def test_a_receiver_with_the_standardwebhooks_library_refuses_tampered_ones() -> None:
    good = standard()
    assert not receiver_accepts(good, BODY.replace(b"finished", b"finishes"))
    assert not receiver_accepts({**good, "webhook-id": "msg-2"})
    later = str(int(good["webhook-timestamp"]) + 1)
    assert not receiver_accepts({**good, "webhook-timestamp": later})
    assert not receiver_accepts({**good, "webhook-signature": "v1," + "A" * 44})
    assert not receiver_accepts(good, secret=standard_secret("another"))
    assert not receiver_accepts(standard(t=int(time.time()) - 301))
    missing = dict(good)
    del missing["webhook-signature"]
    assert not receiver_accepts(missing)


def test_verify_standard_refuses_what_the_library_refuses_and_malformed_headers() -> None:
    good = standard()
    assert not verify_standard(SECRET, good, BODY + b" ")
    assert not verify_standard(SECRET, {**good, "webhook-signature": "garbage"}, BODY)
    assert not verify_standard(SECRET, {**good, "webhook-signature": "v1,%%%"}, BODY)
    assert not verify_standard(SECRET, {}, BODY)
    assert not verify_standard(SECRET, good, b"\xff" + BODY)
