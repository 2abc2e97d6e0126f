"""Production settings, checked the way an operator meets them: by starting manage.py.

Each test runs manage.py in a subprocess with its own environment and its own var/
folder (TASKWRIGHT_VAR_DIR), so nothing here touches the developer's files.
"""

import os
import secrets
import stat
import subprocess
import sys

import pytest
from django.conf import settings

SECRET_KEY_MESSAGE = "SECRET_KEY must be set to a long random value when DEBUG is off"
# The operator's environment is what each test sets, not what this test process carries
# (DJANGO_ALLOW_ASYNC_UNSAFE is set by the browser tests for their own process).
NOT_INHERITED = {
    "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DATABASE_URL", "SECURE_HSTS_PRELOAD", "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS", "DJANGO_ALLOW_ASYNC_UNSAFE",
}


def manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    environment.update(TASKWRIGHT_VAR_DIR=str(tmp_path / "var"), **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = manage(tmp_path, "check", DEBUG="0")
    assert result.returncode != 0
    assert SECRET_KEY_MESSAGE in result.stderr


@pytest.mark.parametrize(
    "secret_key",
    [
        pytest.param("changeme", id="published"),
        pytest.param("django-insecure-" + "x" * 60, id="django-insecure-prefix"),
        pytest.param(secrets.token_urlsafe(16), id="too-short"),
    ],
)
def test_production_refuses_a_known_or_weak_secret_key(tmp_path, secret_key):
    result = manage(tmp_path, "check", DEBUG="0", SECRET_KEY=secret_key)
    assert result.returncode != 0
    assert SECRET_KEY_MESSAGE in result.stderr


def test_deploy_check_is_clean_on_production_settings(tmp_path):
    result = manage(
        tmp_path,
        "check", "--deploy", "--fail-level", "WARNING",
        DEBUG="0", SECRET_KEY=secrets.token_urlsafe(64), ALLOWED_HOSTS="example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_development_generates_a_private_secret_key_once(tmp_path):
    first = manage(tmp_path, "shell", "--no-imports", "-c", "from django.conf import settings; print(settings.SECRET_KEY)", DEBUG="1")
    second = manage(tmp_path, "shell", "--no-imports", "-c", "from django.conf import settings; print(settings.SECRET_KEY)", DEBUG="1")
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "var" / "secret_key"
    assert first.stdout.strip() == second.stdout.strip() == key_file.read_text().strip()
    assert len(first.stdout.strip()) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
