"""KernelIndex settings, read from the environment.

Every value has an embedded default that works on a laptop with nothing
installed (SQLite, a filesystem Celery broker, a file cache). Production sets
DEBUG=false, and then refuses to start without a secret key and allowed hosts.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from records.broker import SHARED_TRANSPORT_OPTIONS
from records.rerun import DEFAULT_CASE_BUDGET_SECONDS, RETRY_AFTER_SECONDS

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("KERNELINDEX_VAR_DIR", BASE_DIR / "var"))
# The embedded defaults (SQLite, broker, cache) keep their files here.
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {value!r}") from None


def env_secret(name: str) -> str:
    """A secret from NAME, or from the file named by NAME_FILE (Docker/K8s secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name, "")


def database_from_url(url: str) -> dict[str, object]:
    """postgres://user:pass@host:port/name?sslmode=require -> a DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme in {"postgres", "postgresql"}:
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
            "CONN_HEALTH_CHECKS": True,
        }
    if parts.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": unquote(parts.path) or ":memory:"}
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parts.scheme!r} is not supported")


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_secret("SECRET_KEY")
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS").split(",") if h]

if DEBUG:
    SECRET_KEY = SECRET_KEY or "insecure-local-development-key-never-used-in-production"
    ALLOWED_HOSTS = ALLOWED_HOSTS or ["127.0.0.1", "localhost", "[::1]", "testserver"]
else:
    missing = [name for name, value in (("SECRET_KEY", SECRET_KEY), ("ALLOWED_HOSTS", ALLOWED_HOSTS)) if not value]
    if missing:
        raise ImproperlyConfigured(f"DEBUG is off: set {' and '.join(missing)} in the environment")


def served_at(host: str, port: int) -> str:
    """The URL of a server listening on host:port (an IPv6 address in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# Permalinks and citations start with it. Unless it is set, the address the server listens on, as `make run`
# passes it on (HOST and PORT; deploy/run.py).
SITE_URL = (env_str("SITE_URL") or served_at(env_str("HOST") or "127.0.0.1", env_int("PORT", 8000))).rstrip("/")
SITE_NAME = "KernelIndex"


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# Proxies in front of the app that add to X-Forwarded-For and set X-Forwarded-Proto (`make serve`'s nginx is
# one). The client address is the one the outermost trusted proxy saw (web/proxies.py); with none, the socket's.
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0)
if TRUSTED_PROXY_HOPS < 0:
    raise ImproperlyConfigured(f"TRUSTED_PROXY_HOPS must be 0 or more, not {TRUSTED_PROXY_HOPS}")
if TRUSTED_PROXY_HOPS:
    # A TLS-terminating proxy says so; the proxy next to the app must overwrite what a client sent.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Under /api/ a CSRF refusal is the API's problem details; elsewhere Django's page (api/problems.py).
CSRF_FAILURE_VIEW = "api.problems.csrf_failure"
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS", origin_of(SITE_URL)).split(",") if o]
# What a deploy changes; cached pages of another release are never served (web/cache.py). Default: the
# checkout's git commit, else a digest of the code and templates.
RELEASE_ID = env_str("RELEASE_ID")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # Its OpClass in index expressions: the search's trigram indexes (runs migration 0007, PostgreSQL only).
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "runs",
    # Reruns, their workers and keys, the verification policy: imports runs, never imported by it.
    "verification",
    "attestations",
    "api",
]

MIDDLEWARE = [
    # Outermost, so that it drops the body of every answer to a HEAD, the refusals below included; outside
    # CommonMiddleware, which sets Content-Length from the body this one then drops.
    "web.middleware.HeadWithoutBodyMiddleware",
    # Under /api/, any error answer of the layers below becomes the API's problem details (api/problems.py).
    "api.problems.ProblemDetailsMiddleware",
    # A request no view can serve (a NUL, a non-UTF-8 form) gets its 400 before anything reads it.
    "web.middleware.RejectMalformedRequestsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "web.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "kernelindex.urls"
WSGI_APPLICATION = "kernelindex.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
DATABASES = {
    "default": database_from_url(DATABASE_URL)
    if DATABASE_URL
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3"}
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Imports hold a write transaction per file; let readers wait instead of failing.
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    # A test database in a file, not in memory, so that a Celery worker started by a test can open it;
    # one per test process, so two test runs in one checkout keep apart.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
# Keeps two sites (or a site and its tests) apart in one Redis database.
CACHE_KEY_PREFIX = env_str("CACHE_KEY_PREFIX")
# Nothing in the cache is pickled, on Redis or in files (web/json_cache.py): whoever can write to the cache
# could otherwise run code in the processes that read it, which hold the database.
REDIS_CACHE_OPTIONS = {"serializer": "web.json_cache.JsonSerializer"}
CACHES = {
    "default": {
        "BACKEND": "web.redis_cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CACHE_KEY_PREFIX,
        "OPTIONS": REDIS_CACHE_OPTIONS,
    }
    if REDIS_URL
    else {"BACKEND": "web.json_cache.JsonFileBasedCache", "LOCATION": VAR_DIR / "cache"}
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# collectstatic writes here; `make serve`'s nginx serves it (deploy/serve.py reads the same variable).
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Production speaks HTTPS only: plain HTTP is redirected and browsers are told to remember it.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if not SECURE_HSTS_PRELOAD:
    # Preloading is a promise about the whole domain made to browser vendors, not a server setting;
    # `check --deploy` reminds of it on every run, so the reminder lives here and in docs/configuration.md.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
# A load balancer checks health over plain HTTP (SECURE_REDIRECT_EXEMPT matches the path without its "/").
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# No inline script or style anywhere (web/middleware.py sends it): htmx's own indicator style is off
# (templates/base.html) and lives in static/css/site.css.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

# Celery carries reruns (verification/tasks.py): the database row is the source of truth, the broker only carries
# its id. REDIS_URL doubles as the broker unless CELERY_BROKER_URL names another; without either, a folder
# in var/ is the broker.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    {
        "data_folder_in": str(VAR_DIR / "broker"),
        "data_folder_out": str(VAR_DIR / "broker"),
        "processed_folder": str(VAR_DIR / "broker-processed"),
        "control_folder": str(VAR_DIR / "broker-control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL == "filesystem://"
    # Routed as the rerun workers route (records/broker.py), whose Redis users may touch their queues' keys alone.
    else {"visibility_timeout": 3600, **SHARED_TRANSPORT_OPTIONS}
)
if CELERY_BROKER_URL == "filesystem://":
    for folder in ("broker", "broker-processed", "broker-control"):
        (VAR_DIR / folder).mkdir(exist_ok=True)
# JSON only, sent and accepted: whoever holds a broker credential can put a message on the queues this
# site's worker consumes, and a pickled one would run its code beside the database.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# A request whose message cannot be sent stays queued in the database and the sweep sends it later:
# fail fast instead of holding the moderator's request while the broker is down.
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("CELERY_BROKER_CONNECTION_TIMEOUT", 3.0)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Controlled reruns (verification/reruns.py). The evidence rule's tolerance (records.rerun.verdict), a fraction:
# how much slower than claimed a kernel may run, and how wide a rerun's interval may be, to decide.
RERUN_TOLERANCE = env_float("RERUN_TOLERANCE", 0.10)
# The harness's limits for one rerun: wall time for the whole evaluation, and memory.
RERUN_TIMEOUT_SECONDS = env_int("RERUN_TIMEOUT_SECONDS", 600)
RERUN_MEMORY_MB = env_int("RERUN_MEMORY_MB", 4096)
# A running rerun's worker writes a heartbeat this often; one silent for RERUN_STALE_AFTER_SECONDS
# is taken for lost and retried, up to RERUN_MAX_ATTEMPTS attempts, then failed.
RERUN_HEARTBEAT_SECONDS = env_float("RERUN_HEARTBEAT_SECONDS", 10)
RERUN_STALE_AFTER_SECONDS = env_float("RERUN_STALE_AFTER_SECONDS", 60)
RERUN_MAX_ATTEMPTS = env_int("RERUN_MAX_ATTEMPTS", 3)
# An attempt whose time budget ran out before it decided (or whose evaluation failed) runs again this long after,
# within the same RERUN_MAX_ATTEMPTS; the last attempt's verdict stands, inconclusive or not.
RERUN_RETRY_AFTER_SECONDS = env_float("RERUN_RETRY_AFTER_SECONDS", RETRY_AFTER_SECONDS)
# Seconds of timed pairs per case, at most, while the speedup's interval is wider than half the tolerance.
RERUN_CASE_BUDGET_SECONDS = env_float("RERUN_CASE_BUDGET_SECONDS", DEFAULT_CASE_BUDGET_SECONDS)
# A request still queued this long after it was sent (or never sent: the broker was down) is sent again.
RERUN_RESEND_AFTER_SECONDS = env_float("RERUN_RESEND_AFTER_SECONDS", 120)
RERUN_SWEEP_SECONDS = env_float("RERUN_SWEEP_SECONDS", 30)
# The site's own ed25519 key, which signs every rerun job it sends (a worker runs no job it did not sign): made
# here on first use, mode 0600. Every web host of a deployment reads the same file; back it up, since a new key
# means new key files for every worker (manage.py worker_key create writes the site's public key into them).
SITE_KEY_FILE = Path(env_str("SITE_KEY_FILE") or VAR_DIR / "site.key")
# Development only: run solutions without the bubblewrap sandbox where it is not installed.
RERUN_UNSANDBOXED = env_bool("RERUN_UNSANDBOXED", False)
# The verification policy (verification/policy.py): every rerunnable run, and every new version of one, is queued for
# a rerun on its own hardware class by the periodic sweep, where a worker key of that class is registered, within
# a day's budget of worker-seconds per class and at most VERIFICATION_MAX_IN_FLIGHT reruns of a class queued or
# running at once. One at a time by default, so that `make run` leaves a laptop usable; production raises it.
VERIFICATION_POLICY = env_bool("VERIFICATION_POLICY", True)
VERIFICATION_BUDGET_SECONDS_PER_DAY = env_float("VERIFICATION_BUDGET_SECONDS_PER_DAY", 3600)
VERIFICATION_MAX_IN_FLIGHT = env_int("VERIFICATION_MAX_IN_FLIGHT", 1)
# A run among its group's first this many whose verdicts all came from another harness version than the one this
# site holds is verified again, within the budget (verification/policy.py Settled).
VERIFICATION_RECHECK_RANKS = env_int("VERIFICATION_RECHECK_RANKS", 3)
# The quorum for the top (records/quorum.py): a run shown as reproduced needs this many agreeing conclusive reruns
# by different registered worker keys; with VERIFICATION_QUORUM_DISTINCT_HOSTS, agreeing reruns must also name
# different hosts in their attested environments. The policy asks another worker for the missing reruns of a #1.
VERIFICATION_QUORUM = env_int("VERIFICATION_QUORUM", 2)
VERIFICATION_QUORUM_DISTINCT_HOSTS = env_bool("VERIFICATION_QUORUM_DISTINCT_HOSTS", False)
if VERIFICATION_QUORUM < 1:
    raise ImproperlyConfigured(f"VERIFICATION_QUORUM must be at least 1, not {VERIFICATION_QUORUM}")
# Open data (runs/dumps.py): Celery beat writes a dump of the whole index here once a day, served at /dumps/;
# the newest DUMPS_KEPT stay.
DUMPS_DIR = Path(env_str("DUMPS_DIR") or VAR_DIR / "dumps")
DUMPS_KEPT = env_int("DUMPS_KEPT", 7)
DUMP_SECONDS = env_float("DUMP_SECONDS", 24 * 3600)
CELERY_BEAT_SCHEDULE = {
    "sweep-reruns": {"task": "runs.tasks.sweep_reruns", "schedule": RERUN_SWEEP_SECONDS},
    "daily-dump": {"task": "runs.tasks.make_daily_dump", "schedule": DUMP_SECONDS},
}

RUNS_PER_PAGE = env_int("RUNS_PER_PAGE", 50)
# Submissions to POST /api/v1/runs per token and hour (api/endpoints.py); more get 429 with Retry-After.
API_SUBMISSIONS_PER_HOUR = env_int("API_SUBMISSIONS_PER_HOUR", 60)
# How long a rendered public page stays in the cache (web/cache.py); 0 renders every request,
# the default in development, where templates change under a running server.
PAGE_CACHE_SECONDS = env_int("PAGE_CACHE_SECONDS", 0 if DEBUG else 24 * 3600)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Django's own console handler would print every request log line a second time.
    "loggers": {
        "django": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO"), "propagate": False},
        # Kombu warns on every connection that a filesystem:// broker URL names no host, which it needs none of.
        "kombu.connection": {"level": "ERROR"},
    },
}
