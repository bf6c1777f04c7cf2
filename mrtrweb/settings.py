"""Django settings for mrtrweb, read from the environment.

With nothing set, this is the embedded single-machine setup: SQLite under ``var/``, an
in-memory channel layer, tasks in the database, a secret key generated into ``var/``.
``DATABASE_URL`` and ``REDIS_URL`` switch to the scale-out setup; ``DJANGO_ENV=production``
turns on the HTTPS hardening. docs/deployment.md lists every variable.
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from mrtrweb import env

ENV = os.environ
BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(ENV.get("MRTRWEB_VAR_DIR", "") or BASE_DIR / "var")

PRODUCTION = env.is_production(ENV)
DEBUG = env.env_bool(ENV, "DJANGO_DEBUG", default=False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG=1 is refused when DJANGO_ENV=production")
if PRODUCTION and not ENV.get("DJANGO_SECRET_KEY", "").strip():
    # Every instance must sign with the same key, so production never invents one.
    raise ImproperlyConfigured("DJANGO_ENV=production needs DJANGO_SECRET_KEY")
SECRET_KEY = env.secret_key(ENV, VAR_DIR / "secret_key")
if PRODUCTION and not ENV.get("MRTRWEB_FERNET_KEYS", "").strip():
    # Secrets at rest must stay readable by every instance and across deploys.
    raise ImproperlyConfigured("DJANGO_ENV=production needs MRTRWEB_FERNET_KEYS")
# Keys for secrets at rest (bearer tokens, headers, requestState), newest first.
FERNET_KEYS = env.fernet_keys(ENV, VAR_DIR / "fernet_key")

ALLOWED_HOSTS = env.env_list(ENV, "DJANGO_ALLOWED_HOSTS", env.DEFAULT_ALLOWED_HOSTS)
CSRF_TRUSTED_ORIGINS = env.env_list(ENV, "DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Two-step sign-in (mrtrweb/accounts): authenticator apps and backup codes.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "mrtrweb.accounts",
    "channels",
    "django_htmx",
    # Before django_tasks_db: its db_worker command runs the scheduler too (mrtrweb/scheduler).
    "mrtrweb.scheduler",
    "django_tasks",
    "django_tasks_db",
    "mrtrweb.people",
    "mrtrweb.encryption",
    "mrtrweb.core",
    "mrtrweb.servers",
    "mrtrweb.policies",
    "mrtrweb.authorizations",
    "mrtrweb.calls",
    "mrtrweb.start_pages",
    "mrtrweb.dashboard",
    "mrtrweb.inbox",
    "mrtrweb.live",
    "mrtrweb.api",
    "mrtrweb.webhooks",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language from the language cookie, else the browser's Accept-Language (English or
    # German); the account's own choice wins, set after authentication (LanguageMiddleware).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # user.is_verified(), then: no page but the code's own until a second factor is passed.
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # The app's own three are sync only, and innermost but for axes. Why: under ASGI, Django
    # runs every middleware outside the innermost sync-only one in one thread, and those
    # inside it on the event loop, each of Django's own there hopping to a thread and back
    # for its request and response halves; with these three here, one hop a request is left.
    "mrtrweb.accounts.middleware.SecondFactorMiddleware",
    # Each page in the person's own time zone (account page, else browser, else UTC).
    "mrtrweb.accounts.timezones.TimeZoneMiddleware",
    # The language chosen on the account page, when there is one, over the browser's.
    "mrtrweb.accounts.languages.LanguageMiddleware",
    # Last, as axes asks: it turns a sign-in refused for too many failures into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "mrtrweb.urls"
WSGI_APPLICATION = "mrtrweb.wsgi.application"
ASGI_APPLICATION = "mrtrweb.asgi.application"

TEMPLATES = [
    {
        # Django's own, with pages that always encode (a server's lone surrogate shows as
        # U+FFFD instead of failing the response): mrtrweb/core/templating.py.
        "BACKEND": "mrtrweb.core.templating.DjangoTemplates",
        "NAME": "django",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "mrtrweb.core.context_processors.people",
            ],
        },
    },
]

DATABASES = {
    "default": env.database_config(
        ENV.get("DATABASE_URL"),
        VAR_DIR / "db.sqlite3",
        pool_size=env.env_int(ENV, "MRTRWEB_DB_POOL_SIZE", 10),
        pool_timeout=env.env_int(ENV, "MRTRWEB_DB_POOL_TIMEOUT", 20),
        prepare_threshold=env.env_int(ENV, "MRTRWEB_DB_PREPARE_THRESHOLD", 0),
        sqlite_synchronous=env.sqlite_synchronous(ENV),
    )
}
if DATABASES["default"]["ENGINE"] in (env.SQLITE_ENGINE, "django.db.backends.sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # Tests race real threads and processes against one database; an in-memory SQLite
    # database locks whole tables without waiting, so tests use a file of their own.
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"mrtrweb-test-{os.getpid()}.sqlite3")
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = env.channel_layers(
    ENV.get("REDIS_URL"), ENV.get("MRTRWEB_CHANNEL_PREFIX", "").strip()
)

# Tasks are rows in the database, run by `manage.py db_worker` processes or, in the embedded
# default, by a worker thread inside the web process (mrtrweb/live/worker.py): without Redis,
# live events must be raised in the process that holds the browsers' sockets.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
MRTRWEB_INPROCESS_WORKER = env.inprocess_worker(ENV)
# Seconds between looks for tasks enqueued by other processes (this process's wake it at once).
MRTRWEB_INPROCESS_WORKER_INTERVAL = env.env_float(ENV, "MRTRWEB_INPROCESS_WORKER_INTERVAL", 0.5)
# Seconds between the scheduler's looks for what is due (expiry, reminders, watchdogs, lost
# sends), in every worker (mrtrweb/scheduler).
MRTRWEB_SCHEDULER_INTERVAL = env.env_float(ENV, "MRTRWEB_SCHEDULER_INTERVAL", 1.0)
# Undelivered answers (refused, 429, 503) are retried by tasks: at most this many attempts,
# waiting BACKOFF seconds doubling up to BACKOFF_MAX (with jitter), never past the round's
# state lifetime. A delivery still running GRACE seconds after its connection's connect timeout
# and answer deadline (from its last progress) is presumed dead (its sender was killed) and
# flagged; a call's first request, past the longest answer with progress, is failed
# (mrtrweb/calls/engine/outcomes.py, watchdogs.py).
MRTRWEB_DELIVERY_ATTEMPTS = env.env_int(ENV, "MRTRWEB_DELIVERY_ATTEMPTS", default=8)
MRTRWEB_DELIVERY_BACKOFF = env.env_float(ENV, "MRTRWEB_DELIVERY_BACKOFF", 2.0)
MRTRWEB_DELIVERY_BACKOFF_MAX = env.env_float(ENV, "MRTRWEB_DELIVERY_BACKOFF_MAX", 300.0)
MRTRWEB_DELIVERY_GRACE = env.env_float(ENV, "MRTRWEB_DELIVERY_GRACE", 60.0)
# A question of a handshake-era server waits on the open stream of its call, held by one
# process, which beats every few seconds on the round; a round whose owner has not beaten for
# STREAM_GRACE seconds (the process died) is marked lost (calls/engine/streams.py).
MRTRWEB_STREAM_GRACE = env.env_float(ENV, "MRTRWEB_STREAM_GRACE", 30.0)
# What a server sends is parsed only when nested no deeper than this (arrays and objects);
# deeper answers are refused (mrtrweb/mcp/jsonparse.py). The size limit is per connection.
MRTRWEB_MAX_JSON_DEPTH = env.env_int(ENV, "MRTRWEB_MAX_JSON_DEPTH", default=64)
# The process that takes an answer (a form or the API) sends it at once, on one of its
# DELIVERY_THREADS; should that process die, the scheduler sends it (calls/handoff.py).
# The answer page waits up to ANSWER_WAIT seconds for the outcome, so a person goes straight
# to the next round or the result; a slower server shows "Delivering…" and updates live.
MRTRWEB_DELIVER_ON_ANSWER = env.env_bool(ENV, "MRTRWEB_DELIVER_ON_ANSWER", default=True)
MRTRWEB_DELIVERY_THREADS = env.env_int(ENV, "MRTRWEB_DELIVERY_THREADS", default=8)
MRTRWEB_ANSWER_WAIT = env.env_float(ENV, "MRTRWEB_ANSWER_WAIT", 2.0, allow_zero=True)
# Starting a call from a page sends it the same way, and the page waits up to START_WAIT
# seconds: a quick server's first round or result is shown at once, a slower one's call page
# shows it working (with its progress) instead of a page that hangs.
MRTRWEB_START_WAIT = env.env_float(ENV, "MRTRWEB_START_WAIT", 1.0, allow_zero=True)
# Webhooks of API calls (mrtrweb/webhooks, docs/api.md): at most MAX_ATTEMPTS attempts per
# delivery (the first included), waiting BACKOFF seconds doubling up to BACKOFF_MAX, each
# waiting TIMEOUT seconds for the receiver. Loopback and private addresses only with
# ALLOW_PRIVATE (default: DEBUG, so a developer's receiver just works), or when in one of
# the ALLOWED_NETWORKS (CIDRs).
MRTRWEB_WEBHOOK_MAX_ATTEMPTS = env.env_int(ENV, "MRTRWEB_WEBHOOK_MAX_ATTEMPTS", default=6)
MRTRWEB_WEBHOOK_BACKOFF = env.env_float(ENV, "MRTRWEB_WEBHOOK_BACKOFF", 60.0, allow_zero=True)
MRTRWEB_WEBHOOK_BACKOFF_MAX = env.env_float(
    ENV, "MRTRWEB_WEBHOOK_BACKOFF_MAX", 900.0, allow_zero=True
)
MRTRWEB_WEBHOOK_TIMEOUT = env.env_float(ENV, "MRTRWEB_WEBHOOK_TIMEOUT", 10.0)
MRTRWEB_WEBHOOK_ALLOW_PRIVATE = env.env_bool(ENV, "MRTRWEB_WEBHOOK_ALLOW_PRIVATE", default=DEBUG)
MRTRWEB_WEBHOOK_ALLOWED_NETWORKS = env.env_list(ENV, "MRTRWEB_WEBHOOK_ALLOWED_NETWORKS")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "core:home"
LOGOUT_REDIRECT_URL = "core:home"
# Django's database sessions, looked up with a statement compiled once (same table and rows).
SESSION_ENGINE = "mrtrweb.accounts.sessions"

# Failed sign-ins are limited (django-axes): FAILURE_LIMIT failures against one entry of
# SIGNIN_LOCKOUT (an account, an address), none older than LOCKOUT_MINUTES, pause signing in
# there for LOCKOUT_MINUTES after the last of them. The address is the connection's, which uvicorn
# takes from X-Forwarded-For only for the proxies in --forwarded-allow-ips: those of
# MRTRWEB_TRUSTED_PROXIES, none by default (env.uvicorn_proxy_flags, docs/deployment.md).
MRTRWEB_TRUSTED_PROXIES = env.trusted_proxies(ENV)
AUTHENTICATION_BACKENDS = [
    # First: a paused account or address is refused before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    # Django's ModelBackend, the person read on every request compiled once.
    "mrtrweb.accounts.backends.AccountBackend",
]
AXES_FAILURE_LIMIT = env.env_int(ENV, "MRTRWEB_SIGNIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.env_float(ENV, "MRTRWEB_SIGNIN_LOCKOUT_MINUTES", 15.0))
AXES_LOCKOUT_PARAMETERS = env.signin_lockout(ENV)
AXES_RESET_ON_SUCCESS = True
# Tries while paused are refused unchecked and do not extend the pause, so the lockout page can
# say when it ends (and an attacker who keeps trying cannot keep the owner out for good).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# django-axes sets its default (429) when unset; declared for the type checker.
AXES_HTTP_RESPONSE_CODE: int
AXES_HANDLER = "mrtrweb.core.signin_limits.SignInLimitsHandler"
# Its start-up banner on every manage.py command says nothing the settings don't.
AXES_VERBOSE = False
AXES_LOCKOUT_CALLABLE = "mrtrweb.core.signin_limits.locked_out"
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "csrfmiddlewaretoken"]

# Links in emails point here (the public address of the site); unset, where `make run` serves
# (HOST and PORT, as the Makefile passes them).
MRTRWEB_BASE_URL = env.base_url(ENV)
# Console in development; SMTP when EMAIL_HOST is set.
EMAIL_BACKEND = ENV.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if ENV.get("EMAIL_HOST")
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = ENV.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env.env_int(ENV, "EMAIL_PORT", default=25)
EMAIL_HOST_USER = ENV.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = ENV.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.env_bool(ENV, "EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = ENV.get("DEFAULT_FROM_EMAIL", "mrtrweb@localhost")

# English unless the browser or the account page asks for German (docs/development.md,
# Translations). Tests and emails without a recipient's choice run in English.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("de", _("German"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Dates as the pages write them, per language (mrtrweb/formats/).
FORMAT_MODULE_PATH = ["mrtrweb.formats"]
TIME_ZONE = ENV.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# Pages run only the site's own script files: no inline script, style attribute or on*
# handler, no eval (htmx is told not to use it: templates/base.html), nothing from elsewhere.
# Images and audio a server sends are shown as checked data: URIs
# (calls/presenting/server_content.py).
# 'self' in connect-src covers the same-origin websockets (ws:, wss:) of live updates.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "media-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [NONE],
        "object-src": [NONE],
    }
}

# The other headers every response carries (SecurityMiddleware, XFrameOptionsMiddleware;
# these are Django's defaults, stated so that they stay): never framed (with frame-ancestors
# above, for browsers that know only one of them), no MIME sniffing, no address sent to other
# sites, and a window of its own that pages of other sites it opens cannot reach.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# No page needs the browser's devices or sensors, so none may use them, nor any frame in it.
# Only features Chromium knows: it complains in the console about the others.
PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "browsing-topics",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "hid",
        "idle-detection",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}

STATIC_URL = "static/"
STATIC_ROOT = Path(ENV.get("DJANGO_STATIC_ROOT", "") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names let WhiteNoise serve files with far-future cache headers.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

if PRODUCTION:
    # TLS ends at a proxy in front of uvicorn; run uvicorn with --proxy-headers and the proxy
    # in --forwarded-allow-ips (MRTRWEB_TRUSTED_PROXIES) so that request.is_secure() sees the
    # original scheme (docs/deployment.md).
    SECURE_SSL_REDIRECT = env.env_bool(ENV, "DJANGO_SECURE_SSL_REDIRECT", default=True)
    # Load balancers probe over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = env.env_int(ENV, "DJANGO_SECURE_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.env_bool(
        ENV, "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True
    )
    SECURE_HSTS_PRELOAD = env.env_bool(ENV, "DJANGO_SECURE_HSTS_PRELOAD", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True

# Logs go to stderr: one JSON object per line (DJANGO_LOG_FORMAT=json, the production default)
# or plain text. mrtrweb.events gets one line per engine event (mrtrweb/core/event_log.py).
LOG_FORMAT = env.log_format(ENV)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "mrtrweb.core.logging_json.JsonFormatter"},
    },
    "filters": {
        "client_errors_in_one_line": {"()": "mrtrweb.core.log_filters.ClientErrorsInOneLine"},
        "readiness_logs_itself": {"()": "mrtrweb.core.log_filters.ReadinessLogsItself"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    # Without this, errors inside requests reach no handler when DEBUG is off.
    "root": {"handlers": ["console"], "level": ENV.get("DJANGO_LOG_LEVEL", "INFO").upper()},
    "loggers": {
        "mrtrweb.events": {"level": ENV.get("MRTRWEB_EVENT_LOG_LEVEL", "INFO").upper()},
        # A 403 is one warning line with its reason, not a traceback (mrtrweb/core/log_filters.py).
        # The readiness probe's 503 is not logged again by Django.
        "django.request": {"filters": ["client_errors_in_one_line", "readiness_logs_itself"]},
        # uvicorn installs its own plain handlers before the app loads; in JSON mode its
        # access and error lines go through ours, so a collector gets one format.
        **(
            {
                name: {"handlers": ["console"], "propagate": False}
                for name in ("uvicorn", "uvicorn.access")
            }
            if LOG_FORMAT == "json"
            else {}
        ),
    },
}

# -- Sign-in beyond the password (mrtrweb/accounts; docs/deployment.md, "Second factor and
# single sign-on") --------------------------------------------------------------------------
# Authenticator apps show the account as "<issuer>:<username>".
OTP_TOTP_ISSUER = ENV.get("MRTRWEB_OTP_ISSUER", "").strip() or "mrtrweb"
# Single sign-on through the organisation's OpenID Connect provider, beside local accounts:
# off unless OIDC_RP_CLIENT_ID is set. The OIDC_* names are mozilla-django-oidc's settings.
globals().update(env.oidc(ENV))
# The names that line sets (all but the first only when single sign-on is on), declared for the
# type checker: a bare annotation binds nothing.
MRTRWEB_OIDC_ENABLED: bool
OIDC_RP_CLIENT_ID: str
OIDC_RP_CLIENT_SECRET: str
OIDC_OP_DISCOVERY_URL: str
OIDC_RP_SIGN_ALGO: str
MRTRWEB_OIDC_NAME: str
MRTRWEB_OIDC_GROUPS_CLAIM: str
MRTRWEB_OIDC_GROUP_MAP: dict[str, list[str]]
MRTRWEB_OIDC_CREATE_USERS: bool
MRTRWEB_OIDC_TRUST_MFA: bool
MRTRWEB_OIDC_MFA_AMR: list[str]
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env.env_float(ENV, "MRTRWEB_OIDC_TIMEOUT", 10.0)
# After the sign-in limits and the local accounts; it answers only the provider's callback.
AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "mrtrweb.accounts.oidc.OidcBackend"]
