"""The signature format receivers rely on, and what verify() refuses."""

from __future__ import annotations

import hashlib
import hmac
import time

from mrtrweb.webhooks.signing import sign, verify

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
