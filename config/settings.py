"""Taskwright settings: one module, driven by environment variables.

Every variable is listed in README.md. The defaults give a zero-set-up machine:
SQLite under var/, an embedded Celery broker on the filesystem, local media.
"""

import json
import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TASKWRIGHT_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)

# Keys that have been published (in docs, tutorials, this repo's history) and so are
# no secret at all. Production refuses them, as it refuses a missing key.
KNOWN_INSECURE_SECRET_KEYS = {"", "changeme", "secret", "dev", "insecure", "taskwright"}


def _development_secret_key() -> str:
    """A random key generated once per machine and kept in var/ (never in the repo)."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(64))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not DEBUG and (
    SECRET_KEY in KNOWN_INSECURE_SECRET_KEYS
    or SECRET_KEY.startswith("django-insecure")
    or len(SECRET_KEY) < 50
):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a long random value when DEBUG is off "
        "(python -c 'import secrets; print(secrets.token_urlsafe(64))')."
    )
if not SECRET_KEY:
    SECRET_KEY = _development_secret_key()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "core",
    "accounts",
    "authoring",
    "llm",
    "workspace",
    "rollouts",
    "verification",
    "reviews",
    "packs",
    "demo",
]

MIDDLEWARE = [
    # /healthz and /readyz, answered before the host check, the HTTPS redirect, sessions and
    # sign-in (core.health): probes come to the node's own address, over plain HTTP.
    "core.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a signed-in user unless its view says @login_not_required (sign-in,
    # sign-out, the API and MCP, which authenticate themselves and answer 401, not a redirect).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                "reviews.context_processors.notifications",
                "accounts.context_processors.navigation",
            ],
            "builtins": ["core.templatetags.taskwright"],
        },
    }
]

# --- Database -------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
# A kept connection is checked (SELECT 1) before its first use in each request or task, so one
# the database dropped meanwhile (a restart, a failover, an idle timeout) is replaced, not failed on.
# Kept for 60 s by default (worker threads and gunicorn's live long). Django's development
# server runs each request on a new thread, so a kept connection outlives its thread until the
# garbage collector finds it: under load they piled up past PostgreSQL's 100 ("too many
# clients", 500s on the batch page in bench/rollouts.py). make run and the bench start it with
# DB_CONN_MAX_AGE=0, as Django's documentation advises for the development server.
DB_CONN_MAX_AGE = int(os.environ.get("DB_CONN_MAX_AGE", "60"))
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=DB_CONN_MAX_AGE, conn_health_checks=True)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file (not :memory:) so a Celery worker started by the tests shares it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
    # WAL: readers (the web pages) no longer wait for a writer (a worker saving a step), nor it
    # for them; a writer waits up to `timeout` s for another. synchronous=NORMAL is WAL's usual
    # pairing: a power cut may lose the last commits, never corrupt the file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

# --- Broker and cache -----------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    BROKER_DIR.mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, taking each message by an atomic rename so that several
    # worker processes may share the folder (`make run` starts one per core).
    CELERY_BROKER_TRANSPORT = "core.filesystem_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR),
        "data_folder_out": str(BROKER_DIR),
        # Exchange tables (remote control, `celery inspect`); kombu's default is a
        # "control" folder relative to the current directory.
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.1,  # seconds between looks at the folder when it is empty
    }
else:
    # A worker holds each message it took (running, or prefetched and waiting for a thread)
    # unacknowledged; Redis hands it out again once it is older than this. A live worker keeps
    # the messages it holds young (core.broker.MessageLease, every sixth of it), so a long job
    # is never handed out twice, and a killed worker's messages, prefetched ones included,
    # come back this long after its last renewal. Tests shorten it.
    CELERY_VISIBILITY_TIMEOUT = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT") or 90)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
    if CELERY_VISIBILITY_TIMEOUT < 10 * 60:
        # kombu only sweeps for expired unacked messages every ~100 s (10 s × every 10th
        # tick); with a short timeout, sweep every second so redelivery follows it.
        # A worker killed while it held kombu's restore mutex (its scan runs every second here)
        # would block every restore for the mutex's default 300 s; the scan takes milliseconds.
        CELERY_BROKER_TRANSPORT_OPTIONS |= {"unacked_restore_interval": 1, "unacked_restore_throttle": 1, "unacked_mutex_expire": 5}
    # A send (apply_async, on_commit) whose connection to Redis fails waits for Redis for up to
    # ~30 s (kombu's own connection retries, then Celery's publish retries below) instead of
    # failing at once: a follow-up job is not lost to a Redis restart.
    CELERY_BROKER_TRANSPORT_OPTIONS |= {"max_retries": 10, "interval_start": 0, "interval_step": 0.5, "interval_max": 2,
                                        "connect_retries_timeout": 15}
    CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 10, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "packs.tasks.*": {"queue": "packs"},
    "reviews.tasks.render_approved_world": {"queue": "packs"},  # rendering, as a pack build does
    "authoring.tasks.*": {"queue": "drafting"},
    "rollouts.tasks.run_rollout": {"queue": "rollouts"},
    "rollouts.tasks.grade_attempt": {"queue": "grading"},
    "verification.tasks.probe_run_write_cheats": {"queue": "grading"},
}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker goes away keeps trying to reconnect, for ever (Celery's default gives
# up after 100 tries, and the worker exits); its running jobs go on meanwhile.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Celery's Django fixup closes a worker thread's database connection before and after every
# task unless this is set; a rollouts worker would open one per rollout (a PostgreSQL backend
# each, and ~1.5 ms of the worker's CPU). Out of reach here: config.celery closes a task's
# connection the way Django's request cycle does, when it is broken or older than CONN_MAX_AGE.
CELERY_DB_REUSE_MAX = 10**9
# A worker's threads take turns holding the interpreter lock. A thread that has waited this
# long (Python's default: 5 ms) makes the running one hand the lock over at once; with dozens
# of rollout threads each back from a short wait, that forced hand-over (two context switches
# and cold caches) kept happening. At 20 ms threads mostly hand over as they block on I/O,
# which they do every millisecond or two; on the rollout benchmark a model call cost a
# quarter less CPU in the worker (bench/rollouts.py, README "Measured"). Set by config.celery
# in workers only; 0 keeps Python's default.
WORKER_SWITCH_INTERVAL = float(os.environ.get("WORKER_SWITCH_INTERVAL") or 0.02)
# How often a worker checks that a Redis broker still holds its data; after a loss (a restart
# without persistence) every queued job is sent again (core.broker). 0 turns the watch off.
BROKER_WATCH_SECONDS = float(os.environ.get("BROKER_WATCH_SECONDS") or 10)
# A running drafting job, pack build or grade whose worker gave no sign of life for this long
# is taken over by the next message for it; a worker beats each of its jobs every sixth of
# it, and looks for stale jobs to send again every JOB_STALE_SECONDS (core.jobs, config.celery).
# Tests shorten it.
JOB_STALE_SECONDS = float(os.environ.get("JOB_STALE_SECONDS") or 60)
if JOB_STALE_SECONDS <= 0:
    raise ImproperlyConfigured("JOB_STALE_SECONDS must be a number of seconds above 0.")

CACHE_URL = os.environ.get("CACHE_URL") or REDIS_URL
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
else:
    # Shared by every process on this machine (locmem would not be).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# --- Files ----------------------------------------------------------------------------
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "/media/"  # never served directly: files go through views as attachments
STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing one
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True
# Uploads' originals, built packs and the pack builds' world cache go through Django's storage,
# so that every web node and worker sees what any other wrote. On one machine that is MEDIA_ROOT;
# on several, an S3-compatible store: STORAGE_BACKEND=storages.backends.s3.S3Storage with
# AWS_STORAGE_BUCKET_NAME, AWS_S3_ENDPOINT_URL (any S3-compatible service; empty for AWS) and
# AWS_S3_REGION_NAME, or the same keys (bucket_name, endpoint_url, region_name …) in
# STORAGE_OPTIONS (JSON), which wins. Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
# in the environment (read by django-storages and boto3, never copied into settings), or an
# instance role.
STORAGE_BACKEND = os.environ.get("STORAGE_BACKEND") or "django.core.files.storage.FileSystemStorage"
STORAGE_OPTIONS = json.loads(os.environ.get("STORAGE_OPTIONS") or "{}")
if STORAGE_BACKEND in ("storages.backends.s3.S3Storage", "storages.backends.s3boto3.S3Boto3Storage"):
    STORAGE_OPTIONS = {
        "bucket_name": os.environ.get("AWS_STORAGE_BUCKET_NAME") or None,
        "endpoint_url": os.environ.get("AWS_S3_ENDPOINT_URL") or None,
        "region_name": os.environ.get("AWS_S3_REGION_NAME") or None,
        # As on the filesystem: a name already taken gets another, never overwritten (two
        # builds of one pack, a redelivered job); files are private and served through views.
        "file_overwrite": False,
        "default_acl": None,
        **STORAGE_OPTIONS,
    }
    if not STORAGE_OPTIONS["bucket_name"]:
        raise ImproperlyConfigured(
            "STORAGE_BACKEND is S3: set AWS_STORAGE_BUCKET_NAME (or bucket_name in STORAGE_OPTIONS) to the bucket to keep files in."
        )
STORAGES = {
    "default": {"BACKEND": STORAGE_BACKEND, "OPTIONS": STORAGE_OPTIONS},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
# Files in one upload (page or API); authoring.services.uploads reads this one limit.
DATA_UPLOAD_MAX_NUMBER_FILES = 50

# --- QA: email notices and review claims ----------------------------------------------------
# Notices go to the bell and by email (Django 6.1's MAILERS). With no EMAIL_BACKEND set, DEBUG
# prints mail to the console (`make run`) and production uses SMTP with EMAIL_HOST, EMAIL_PORT,
# EMAIL_HOST_USER, EMAIL_HOST_PASSWORD and EMAIL_USE_TLS from the environment.
_EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend"
)
MAILERS = {"default": {"BACKEND": _EMAIL_BACKEND}}
if _EMAIL_BACKEND.endswith("smtp.EmailBackend"):
    MAILERS["default"]["OPTIONS"] = {
        "host": os.environ.get("EMAIL_HOST", "localhost"),
        "port": int(os.environ.get("EMAIL_PORT", "25")),
        "username": os.environ.get("EMAIL_HOST_USER", ""),
        "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
        "timeout": 10,
    }
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Taskwright <taskwright@localhost>")
# The address people open Taskwright at, for the links in emails ("" leaves links out).
SITE_URL = os.environ.get("SITE_URL", "")
# A reviewer's claim older than this is given to the next reviewer who asks.
REVIEW_CLAIM_TIMEOUT_HOURS = float(os.environ.get("REVIEW_CLAIM_TIMEOUT_HOURS", "24"))

# --- Auth and security ----------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
LOGIN_RATE_LIMIT = (int(os.environ.get("LOGIN_RATE_LIMIT", "10")), 15 * 60)  # failures per window
# Failed sign-ins from one client address whatever the user names tried (password spraying),
# per the same 15-minute window. Keep it well above LOGIN_RATE_LIMIT: an office behind one
# address shares it.
LOGIN_ADDRESS_RATE_LIMIT = int(os.environ.get("LOGIN_ADDRESS_RATE_LIMIT") or 50)
# How many proxies in front of the web servers append to X-Forwarded-For: the client address
# (for the sign-in limits and the anonymous API throttle) is the one they saw. 0 (no proxy):
# REMOTE_ADDR, and a client-sent X-Forwarded-For is ignored, so it cannot dodge a limit.
NUM_PROXIES = int(os.environ.get("NUM_PROXIES") or 0)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # On by default (as cookiecutter-django does) so `check --deploy` is clean; the header
    # alone enrolls nothing, it only permits submitting the domain to the preload list.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "accounts.authentication.BearerTokenAuthentication",  # the same token, as MCP clients send it
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "core.schema.AutoSchema",  # drf-spectacular's; pages only declared lists, documents DELETE bodies
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "core.apis.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Per token (per signed-in user) and, before sign-in, per client address; counted in the
    # default cache, which is Redis (shared by every web process and host) when REDIS_URL or
    # CACHE_URL is set. Over the rate: 429 with Retry-After. Generous: a person or a script
    # doing real work never meets them; a runaway loop does.
    "DEFAULT_THROTTLE_CLASSES": ["core.throttles.TokenRateThrottle", "core.throttles.AddressRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "token": os.environ.get("API_RATE_PER_TOKEN") or "1200/min",
        "address": os.environ.get("API_RATE_PER_ADDRESS") or "300/min",
    },
    "NUM_PROXIES": NUM_PROXIES,
}
SPECTACULAR_SETTINGS = {
    # What every operation may answer, documented where its view did not: 400, 401, 403, 404, 415, 429 (core.schema).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "core.schema.document_common_errors"],
    "TITLE": "Taskwright API",
    "DESCRIPTION": "Worlds, tasks, rubrics, reviews and packs: the same flows as the pages.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a `status` field with different choices; name each enum after
    # its model so the schema is stable and `check --deploy` (drf_spectacular.W001) is clean.
    "ENUM_NAME_OVERRIDES": {
        "DocumentStatusEnum": "authoring.models.DocumentStatus",
        "EnvTaskStatusEnum": "authoring.models.EnvTaskStatus",
        "SubmissionStatusEnum": "reviews.models.SubmissionStatus",
        "PackStatusEnum": "packs.models.PackStatus",
        "GradeStatusEnum": "rollouts.models.GradeStatus",
    },
}

# /readyz: seconds each check (database, broker, cache, storage) may take before it counts as failed.
HEALTH_CHECK_TIMEOUT = float(os.environ.get("HEALTH_CHECK_TIMEOUT") or 2)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},  # (the model SDKs' client) one line per model call otherwise
        "mcp": {"level": "WARNING"},  # the SDK logs every stateless request's start and stop
    },
}

# --- Models ---------------------------------------------------------------------------
# Concurrency slots per endpoint live in Redis when there is one, else in lock files
# under var/ (enough for every process on one machine).
LLM_SLOTS_REDIS_URL = os.environ.get("LLM_SLOTS_REDIS_URL") or REDIS_URL or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
# A running rollout whose last sign of life is older than this lost its worker: a redelivered
# message may take it over. Its worker beats it every sixth of JOB_STALE_SECONDS whatever the
# rollout waits on (core.jobs.kept_alive), so the default is the same as other jobs'.
ROLLOUT_STALE_SECONDS = float(os.environ.get("ROLLOUT_STALE_SECONDS") or JOB_STALE_SECONDS)
LLM_BACKOFF_BASE = float(os.environ.get("LLM_BACKOFF_BASE", "0.5"))  # seconds, doubled per retry
# Which environment variables an endpoint may name as its API key variable (llm.egress). Any
# name starting with TASKWRIGHT_MODEL_KEY_ is allowed; other names only when listed here,
# comma-separated, e.g. MODEL_KEY_VARIABLES=OPENAI_API_KEY,ANTHROPIC_API_KEY (empty by default:
# an endpoint naming OPENAI_API_KEY works once the operator lists it, or renames the variable
# to TASKWRIGHT_MODEL_KEY_OPENAI). Never, even when listed: SECRET_KEY, DATABASE_URL,
# REDIS_URL, CELERY_BROKER_URL, CACHE_URL, LLM_SLOTS_REDIS_URL, STORAGE_OPTIONS, PATH, HOME,
# USER, PWD, SHELL, and any name matching *PASSWORD*, *PASSWD*, *SECRET_KEY*,
# *SECRET_ACCESS_KEY* or *_URL. Checked when an endpoint is saved and again on every call.
MODEL_KEY_VARIABLES = env_list("MODEL_KEY_VARIABLES")
# Model calls reach only public addresses unless this is on ("1"/"true"): a base URL whose
# host resolves to a loopback, private, link-local (cloud metadata), shared, unspecified,
# multicast or reserved address is refused when saved and again at every connection. Turn it
# on for a model server on this machine or the local network (Ollama, vLLM); `make run` does.
MODEL_ALLOW_PRIVATE_NETWORKS = env_bool("MODEL_ALLOW_PRIVATE_NETWORKS", False)

# --- Reward-hacking probes (verification) ------------------------------------------------
# What the "Run the probes" form starts with; the author can change both for a run, and the
# run keeps the values it ran with (so its flags never change afterwards). Cheats per kind:
# how many answers the cheat model writes for each kind of probe (0–5; each kind is one call).
# Flag score: a probe that passes, or scores this or more, is flagged.
PROBE_CHEATS_PER_KIND = int(os.environ.get("PROBE_CHEATS_PER_KIND") or 2)
PROBE_FLAG_SCORE = float(os.environ.get("PROBE_FLAG_SCORE") or 0.5)
