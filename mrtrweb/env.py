"""Reading the deployment's environment into Django settings values.

Kept apart from ``settings.py`` so every rule can be tested with a plain mapping instead of
patching ``os.environ`` and reloading the settings module. Nothing here imports Django, so the
module is safe to import before Django is configured.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, cast

import dj_database_url

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})
PRODUCTION_WORDS = frozenset({"production", "prod"})

DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "[::1]")
REDIS_CHANNEL_LAYER = "mrtrweb.live.redis_layer.WaitingRedisChannelLayer"
IN_MEMORY_CHANNEL_LAYER = "mrtrweb.live.layers.SweptInMemoryChannelLayer"
REDIS_SOCKET_TIMEOUT = 15.0
LOG_FORMATS = ("json", "plain")
POSTGRES_CONNECT_TIMEOUT = 5  # seconds
# The embedded default's database backend: Django's SQLite one, its connections pooled.
SQLITE_ENGINE = "mrtrweb.db.sqlite3"
# A ``PRAGMA synchronous`` the embedded database may run with (:func:`sqlite_synchronous`).
Synchronous = Literal["FULL", "NORMAL"]


class EnvError(ValueError):
    """An environment variable holds a value that cannot be used."""


def env_bool(environ: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    # A typo such as DJANGO_DEBUG=ture must not silently mean "off" (or "on").
    raise EnvError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise EnvError(f"{name}={raw!r} is not an integer") from None


def env_list(environ: Mapping[str, str], name: str, default: tuple[str, ...] = ()) -> list[str]:
    """A comma-separated list; unset means the default, set-but-empty means an empty list."""
    raw = environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def is_production(environ: Mapping[str, str]) -> bool:
    return environ.get("DJANGO_ENV", "").strip().lower() in PRODUCTION_WORDS


def database_config(
    database_url: str | None,
    sqlite_path: Path,
    *,
    pool_size: int = 10,
    pool_timeout: int = 20,
    prepare_threshold: int = 0,
    sqlite_synchronous: Synchronous = "FULL",
) -> dict[str, Any]:
    """``DATABASES["default"]``: the URL's database, or the embedded SQLite file.

    PostgreSQL connections come from a pool of up to ``pool_size`` per process (0: none); a
    request waits up to ``pool_timeout`` seconds for a free one; with ``prepare_threshold``, a
    statement sent that many times on a connection is prepared there (0: none is). SQLite
    flushes its log to disk as ``sqlite_synchronous`` says (:func:`sqlite_synchronous`).
    """
    if database_url:
        # Persistent connections are per thread, and under ASGI every sync_to_async call may
        # land on another thread, so they would pile up; connect per request instead.
        config: dict[str, Any] = dict(
            dj_database_url.parse(database_url, conn_max_age=0, conn_health_checks=True)
        )
        if config["ENGINE"] == "django.db.backends.postgresql":
            # libpq waits forever for an unanswering host by default; a bounded wait lets
            # /readyz report the database as down instead of hanging with it.
            options = config.setdefault("OPTIONS", {})
            options.setdefault("connect_timeout", POSTGRES_CONNECT_TIMEOUT)
            if pool_size > 0:
                # Opening a connection costs ~10 ms, more than the rest of a request; the pool
                # keeps them open across requests and threads, which CONN_MAX_AGE cannot do
                # under ASGI. Each request's sync code runs in a thread of its own and holds a
                # connection until it ends, so a crowd of requests (a hundred starts at once)
                # queues for the pool: it must wait as long as SQLite waits for its lock, not
                # fail after a few seconds (it did: 70 of 100 starts were server errors).
                # /readyz bounds its own wait (core.readiness.CHECK_TIMEOUT).
                options["pool"] = {"min_size": 1, "max_size": pool_size, "timeout": pool_timeout}
            if prepare_threshold > 0:
                # The app sends the same few statements over and over (a flow's guarded
                # updates, its reads by key): prepared on the server, each is parsed and
                # planned once per connection, which the pool keeps open. psycopg prepares
                # only statements whose parameters the server binds (Django binds them on the
                # client unless told). Off by default, as Django has it: the server takes at
                # most 65,535 parameters a statement and Django does not split a bulk insert
                # or a cascade's delete for it, and a pooler in transaction mode (PgBouncer)
                # cannot keep prepared statements.
                options["server_side_binding"] = True
                options["prepare_threshold"] = prepare_threshold
        return config
    return {
        # Django's SQLite backend with a pool (mrtrweb/db/sqlite3): each request runs in a
        # thread of its own, and a connection opened anew reads the whole schema again.
        "ENGINE": SQLITE_ENGINE,
        "NAME": sqlite_path,
        "OPTIONS": {
            # The web server and the task worker write to the same file: take the write lock
            # when a transaction starts and wait for it, instead of failing with "database is
            # locked" halfway through; WAL lets readers go on while one process writes.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": f"PRAGMA journal_mode=WAL; PRAGMA synchronous={sqlite_synchronous};",
        },
    }


# How the embedded SQLite database makes a commit durable (its ``PRAGMA synchronous``).
SQLITE_SYNCHRONOUS: tuple[Synchronous, ...] = ("FULL", "NORMAL")


def sqlite_synchronous(environ: Mapping[str, str]) -> Synchronous:
    """``MRTRWEB_SQLITE_SYNCHRONOUS``: ``FULL`` (the default) or ``NORMAL``.

    Why FULL: in WAL mode, NORMAL flushes the log to disk only at checkpoints, so a power cut
    or a crash of the machine (not of the process) can take back transactions that were
    already committed: an answer a person was told was sent, or the claim of a delivery
    already sent, which the safety net would then send a second time. FULL flushes at every
    commit, as PostgreSQL does by default, for a quarter of a millisecond a commit on the
    bench machine's disk (docs/performance.md). NORMAL is for a database whose last seconds
    may be lost: tests, demos. OFF is not offered: it risks a corrupt file."""
    raw = environ.get("MRTRWEB_SQLITE_SYNCHRONOUS", "").strip().upper()
    if not raw:
        return "FULL"
    if raw not in SQLITE_SYNCHRONOUS:
        raise EnvError(
            f"MRTRWEB_SQLITE_SYNCHRONOUS={raw!r} is not one of {', '.join(SQLITE_SYNCHRONOUS)}"
        )
    return cast(Synchronous, raw)


def env_float(
    environ: Mapping[str, str], name: str, default: float, *, allow_zero: bool = False
) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise EnvError(f"{name}={raw!r} is not a number") from None
    if allow_zero and value == 0:
        return value
    if not value > 0:
        kind = "zero or a positive number" if allow_zero else "a positive number"
        raise EnvError(f"{name}={raw!r} must be {kind}")
    return value


def inprocess_worker(environ: Mapping[str, str]) -> bool:
    """``MRTRWEB_INPROCESS_WORKER``: run tasks in a thread of the web process.

    On by default without ``REDIS_URL`` (the in-memory channel layer only reaches browsers of
    the process that raised an event), off with it (run ``manage.py db_worker`` processes).
    """
    return env_bool(
        environ, "MRTRWEB_INPROCESS_WORKER", default=not environ.get("REDIS_URL", "").strip()
    )


def trusted_proxies(environ: Mapping[str, str]) -> list[str]:
    """``MRTRWEB_TRUSTED_PROXIES``: the addresses or networks (``10.0.0.2``, ``10.0.0.0/24``)
    of the reverse proxies whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed.

    None by default: a client's own headers never choose the address the sign-in limits count
    (nor the scheme), not even a client on this host, which uvicorn trusts unless told."""
    proxies = env_list(environ, "MRTRWEB_TRUSTED_PROXIES")
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise EnvError(
                f"MRTRWEB_TRUSTED_PROXIES: {proxy!r} is not an IP address or network"
            ) from None
    return proxies


def uvicorn_proxy_flags(environ: Mapping[str, str]) -> list[str]:
    """uvicorn's options for :func:`trusted_proxies` (``make run`` passes them)."""
    proxies = trusted_proxies(environ)
    if not proxies:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", f"--forwarded-allow-ips={','.join(proxies)}"]


DEFAULT_OIDC_SCOPES = "openid email profile"
DEFAULT_OIDC_MFA_AMR = ("mfa", "otp")


def oidc_group_map(raw: str) -> dict[str, list[str]]:
    """``MRTRWEB_OIDC_GROUP_MAP``: ``idp-group=App group,...`` as {IdP group: [app groups]}.

    An IdP group may be given several times (it then grants several groups); several IdP
    groups may grant the same one."""
    mapping: dict[str, list[str]] = {}
    for entry in (item.strip() for item in raw.split(",")):
        if not entry:
            continue
        idp_group, equals, app_group = (part.strip() for part in entry.partition("="))
        if not equals or not idp_group or not app_group:
            raise EnvError(
                f"MRTRWEB_OIDC_GROUP_MAP: {entry!r} is not idp-group=App group "
                "(entries separated by commas)"
            )
        mapping.setdefault(idp_group, [])
        if app_group not in mapping[idp_group]:
            mapping[idp_group].append(app_group)
    return mapping


def oidc(environ: Mapping[str, str]) -> dict[str, Any]:
    """Single sign-on through an OpenID Connect provider: the settings it needs.

    Off (``MRTRWEB_OIDC_ENABLED`` false and nothing else) unless ``OIDC_RP_CLIENT_ID`` is set.
    Then the client secret and the provider are required: ``OIDC_OP_DISCOVERY_URL`` or
    ``OIDC_OP_ISSUER`` (whose ``/.well-known/openid-configuration`` is read on first use), or
    every endpoint (``OIDC_OP_AUTHORIZATION_ENDPOINT``, ``OIDC_OP_TOKEN_ENDPOINT``,
    ``OIDC_OP_USER_ENDPOINT``, ``OIDC_OP_JWKS_ENDPOINT``) with ``OIDC_OP_ISSUER``. Endpoints
    that are set win over discovered ones.
    """

    def text(name: str) -> str:
        return environ.get(name, "").strip()

    client_id = text("OIDC_RP_CLIENT_ID")
    if not client_id:
        return {"MRTRWEB_OIDC_ENABLED": False}
    if not text("OIDC_RP_CLIENT_SECRET"):
        raise EnvError("OIDC_RP_CLIENT_ID is set: set OIDC_RP_CLIENT_SECRET too")
    endpoints = {
        name: text(name)
        for name in (
            "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT",
            "OIDC_OP_USER_ENDPOINT",
            "OIDC_OP_JWKS_ENDPOINT",
        )
    }
    issuer = text("OIDC_OP_ISSUER").rstrip("/")
    discovery = text("OIDC_OP_DISCOVERY_URL")
    if not discovery and issuer and not all(endpoints.values()):
        discovery = f"{issuer}/.well-known/openid-configuration"
    if not discovery and not (issuer and all(endpoints.values())):
        missing = [name for name, value in endpoints.items() if not value]
        raise EnvError(
            "OIDC_RP_CLIENT_ID is set: set OIDC_OP_DISCOVERY_URL or OIDC_OP_ISSUER, or every "
            f"endpoint and OIDC_OP_ISSUER (missing: {', '.join(missing or ['OIDC_OP_ISSUER'])})"
        )
    algorithm = text("OIDC_RP_SIGN_ALGO") or "RS256"
    if algorithm.lower() == "none":
        raise EnvError("OIDC_RP_SIGN_ALGO=none: ID tokens must be signed")
    amr = env_list(environ, "MRTRWEB_OIDC_MFA_AMR", DEFAULT_OIDC_MFA_AMR)
    return {
        "MRTRWEB_OIDC_ENABLED": True,
        "OIDC_RP_CLIENT_ID": client_id,
        "OIDC_RP_CLIENT_SECRET": text("OIDC_RP_CLIENT_SECRET"),
        **endpoints,
        "OIDC_OP_ISSUER": issuer,
        "OIDC_OP_DISCOVERY_URL": discovery,
        "OIDC_RP_SIGN_ALGO": algorithm,
        "OIDC_RP_SCOPES": text("OIDC_RP_SCOPES") or DEFAULT_OIDC_SCOPES,
        "MRTRWEB_OIDC_NAME": text("MRTRWEB_OIDC_NAME") or "single sign-on",
        "MRTRWEB_OIDC_GROUPS_CLAIM": text("MRTRWEB_OIDC_GROUPS_CLAIM") or "groups",
        "MRTRWEB_OIDC_GROUP_MAP": oidc_group_map(text("MRTRWEB_OIDC_GROUP_MAP")),
        "MRTRWEB_OIDC_CREATE_USERS": env_bool(environ, "MRTRWEB_OIDC_CREATE_USERS", True),
        "MRTRWEB_OIDC_TRUST_MFA": env_bool(environ, "MRTRWEB_OIDC_TRUST_MFA", True),
        "MRTRWEB_OIDC_MFA_AMR": [value.lower() for value in amr],
    }


def channel_layers(redis_url: str | None, prefix: str = "") -> dict[str, Any]:
    """``CHANNEL_LAYERS``: Redis when several processes must reach each other's browsers.

    ``prefix`` (``MRTRWEB_CHANNEL_PREFIX``) namespaces the layer's keys, so that several
    deployments (or test runs) can share one Redis database without hearing each other.
    """
    if redis_url:
        # redis-py 8 reads with a 5 s timeout by default, no longer than the blocking pop a
        # consumer waits in (channels-redis: 5 s), so an idle socket's consumer would crash
        # (django/channels_redis#422). Longer than the pop, still finite if Redis goes away.
        host = {"address": redis_url, "socket_timeout": REDIS_SOCKET_TIMEOUT}
        config: dict[str, Any] = {"hosts": [host]}
        if prefix:
            config["prefix"] = prefix
        return {"default": {"BACKEND": REDIS_CHANNEL_LAYER, "CONFIG": config}}
    return {"default": {"BACKEND": IN_MEMORY_CHANNEL_LAYER}}


def log_format(environ: Mapping[str, str]) -> str:
    """``DJANGO_LOG_FORMAT``: ``json`` (one object per line) or ``plain``.

    JSON by default in production, where logs go to a collector; plain text otherwise,
    for people reading a terminal.
    """
    raw = environ.get("DJANGO_LOG_FORMAT", "").strip().lower()
    if not raw:
        return "json" if is_production(environ) else "plain"
    if raw not in LOG_FORMATS:
        raise EnvError(f"DJANGO_LOG_FORMAT={raw!r} is not one of {', '.join(LOG_FORMATS)}")
    return raw


# What a failed sign-in counts against (django-axes' lockout parameters), in plain words.
SIGNIN_LOCKOUT_WORDS = {"account": "username", "address": "ip_address"}
DEFAULT_SIGNIN_LOCKOUT = "account,address"


def signin_lockout(environ: Mapping[str, str]) -> list[str | list[str]]:
    """``MRTRWEB_SIGNIN_LOCKOUT``: what failed sign-ins are counted against.

    A comma-separated list; each entry is counted and locked on its own: ``account`` (the
    username typed, from any address), ``address`` (the client's address, whatever username)
    or ``account+address`` (that username from that address). The default,
    ``account,address``, locks an account tried too often from anywhere and an address that
    tried too often on any accounts.
    """
    raw = environ.get("MRTRWEB_SIGNIN_LOCKOUT", "").strip().lower() or DEFAULT_SIGNIN_LOCKOUT
    parameters: list[str | list[str]] = []
    for entry in (item.strip() for item in raw.split(",")):
        words = [word.strip() for word in entry.split("+")]
        unknown = [word for word in words if word not in SIGNIN_LOCKOUT_WORDS]
        if not entry or unknown:
            raise EnvError(
                f"MRTRWEB_SIGNIN_LOCKOUT={raw!r}: use account, address or account+address, "
                "separated by commas"
            )
        names = [SIGNIN_LOCKOUT_WORDS[word] for word in dict.fromkeys(words)]
        parameters.append(names[0] if len(names) == 1 else names)
    return parameters


def secret_key(environ: Mapping[str, str], key_file: Path) -> str:
    """``DJANGO_SECRET_KEY`` if set, else a key generated once and kept in ``key_file``."""
    from_env = environ.get("DJANGO_SECRET_KEY", "").strip()
    if from_env:
        return from_env
    return _file_key(key_file, lambda: secrets.token_urlsafe(64))


def fernet_keys(environ: Mapping[str, str], key_file: Path) -> list[str]:
    """The keys that encrypt secrets at rest, newest first.

    ``MRTRWEB_FERNET_KEYS`` (comma-separated) if set, else one key generated once into
    ``key_file`` for local runs.
    """
    from_env = env_list(environ, "MRTRWEB_FERNET_KEYS")
    if from_env:
        return from_env
    return [_file_key(key_file, lambda: base64.urlsafe_b64encode(os.urandom(32)).decode())]


def _file_key(key_file: Path, make: Callable[[], str]) -> str:
    try:
        return _read_key(key_file)
    except FileNotFoundError:
        pass
    key_file.parent.mkdir(parents=True, exist_ok=True)
    # Write a private temporary file, then hard-link it into place: the link fails if another
    # process (the web server and the worker start together) won the race, and nobody can
    # ever read a half-written key.
    tmp = key_file.with_name(f".{key_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(make() + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(tmp, key_file)
    finally:
        tmp.unlink(missing_ok=True)
    return _read_key(key_file)


def _read_key(key_file: Path) -> str:
    key = key_file.read_text().strip()
    if not key:
        raise EnvError(f"{key_file} is empty; delete it to have a new key generated")
    return key


# Addresses a server listens on that no browser can open: links name the loopback instead.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}


def base_url(environ: Mapping[str, str]) -> str:
    """``MRTRWEB_BASE_URL``: the site's public address, for links in emails and webhooks.

    Unset, it is where ``make run`` serves: ``http://HOST:PORT`` with the same variables the
    Makefile passes to uvicorn (127.0.0.1 and 8000 by default), so a ``PORT=8080 make run``
    sends links to port 8080.
    """
    explicit = environ.get("MRTRWEB_BASE_URL", "").strip()
    if explicit:
        return explicit.rstrip("/")
    host = environ.get("HOST", "").strip() or "127.0.0.1"
    host = _ANY_ADDRESS.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    port = env_int(environ, "PORT", 8000)
    return f"http://{host}:{port}"
