"""Loaded with `-p tests.xdist_isolation` (pyproject's addopts), before Django's settings are
read: under pytest-xdist each worker process gets its own var directory and its own Redis
database, so two workers never share a Celery queue, a cache key, a model-endpoint slot or
an embedded broker folder. pytest-django already gives each worker its own test database
(test_<name>_gw0, …); Celery workers a test starts inherit this environment.

Without xdist (PYTEST_XDIST_WORKER unset) nothing changes."""

import os
import re
from pathlib import Path

REDIS_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL", "LLM_SLOTS_REDIS_URL")
REDIS_DATABASES = 16  # Redis's default `databases`


def _shifted(url: str, offset: int) -> str:
    """redis://host:port/N → redis://host:port/N+offset (N defaults to 0)."""
    match = re.fullmatch(r"(rediss?://[^/?#]*)(?:/(\d*))?(\?.*)?", url)
    if not match:
        return url
    base, db, query = match.group(1), int(match.group(2) or 0), match.group(3) or ""
    if db + offset >= REDIS_DATABASES:
        raise RuntimeError(f"xdist worker needs Redis database {db + offset}, past the {REDIS_DATABASES} Redis has by default.")
    return f"{base}/{db + offset}{query}"


def isolate(worker: str) -> None:
    offset = int(worker.removeprefix("gw"))
    var_dir = Path(os.environ.get("TASKWRIGHT_VAR_DIR") or Path(__file__).resolve().parent.parent / "var")
    os.environ["TASKWRIGHT_VAR_DIR"] = str(var_dir / f"xdist-{worker}")
    if os.environ.get("MEDIA_ROOT"):
        os.environ["MEDIA_ROOT"] = str(Path(os.environ["MEDIA_ROOT"]) / f"xdist-{worker}")
    for name in REDIS_VARIABLES:
        if os.environ.get(name):
            os.environ[name] = _shifted(os.environ[name], offset)


if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    isolate(worker)
