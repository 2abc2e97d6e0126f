"""config/gunicorn.conf.py: gunicorn loads it (and the app), reads its values from the
environment, and serves with it; successful health probes stay out of the access log."""

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "gunicorn.conf.py"
GUNICORN = [sys.executable, "-m", "gunicorn"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DEBUG": "1", **extra}
    for name in ("BIND", "WEB_CONCURRENCY", "GUNICORN_TIMEOUT", "FORWARDED_ALLOW_IPS"):
        if name not in extra:
            env.pop(name, None)
    return env


def _printed_config(**extra: str) -> dict[str, str]:
    out = subprocess.run(
        [*GUNICORN, "--print-config", "-c", str(CONFIG)], cwd=ROOT, env=_env(**extra), capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return {name.strip(): value.strip() for name, _, value in (line.partition("=") for line in out.stdout.splitlines())}


def test_gunicorn_checks_the_config_and_loads_the_app():
    result = subprocess.run(
        [*GUNICORN, "--check-config", "-c", str(CONFIG)], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # A broken app is caught too: production settings without a SECRET_KEY refuse to load.
    broken = subprocess.run(
        [*GUNICORN, "--check-config", "-c", str(CONFIG)], cwd=ROOT, env={**_env(DEBUG="0"), "SECRET_KEY": ""},
        capture_output=True, text=True, timeout=60,
    )
    assert broken.returncode != 0 and "SECRET_KEY" in broken.stdout + broken.stderr


def test_values_come_from_the_environment():
    config = _printed_config(BIND="0.0.0.0:9123", WEB_CONCURRENCY="3", GUNICORN_TIMEOUT="45", FORWARDED_ALLOW_IPS="10.0.0.5")
    assert config["bind"] == "['0.0.0.0:9123']"
    assert config["workers"] == "3"
    assert config["timeout"] == "45" and config["graceful_timeout"] == "30"
    assert config["forwarded_allow_ips"] == "['10.0.0.5']"
    assert config["wsgi_app"] == "config.wsgi:application"
    assert "%(M)sms" in config["access_log_format"]


def test_default_workers_is_twice_the_cores_plus_one_capped():
    spec = importlib.util.spec_from_file_location("gunicorn_conf", CONFIG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.default_workers(1, 8) == 3
    assert module.default_workers(2, 8) == 5
    assert module.default_workers(16, 8) == 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    try:
        # Generous: a worker imports the URLconf and every API module on its first request.
        with urllib.request.urlopen(url, timeout=30) as response:  # loopback only
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_serves_with_it_and_keeps_probes_out_of_the_access_log(tmp_path):
    port = _free_port()
    access_log = tmp_path / "access.log"
    server = subprocess.Popen(
        [*GUNICORN, "-c", str(CONFIG)], cwd=ROOT,
        env=_env(BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1", GUNICORN_ACCESS_LOG=str(access_log)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status = _get(f"http://127.0.0.1:{port}/healthz")
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not answer within 30 s"
                time.sleep(0.2)
        assert status == 200
        assert _get(f"http://127.0.0.1:{port}/api/projects/") == 401
    finally:
        server.terminate()
        server.wait(timeout=40)
    lines = access_log.read_text().splitlines()
    assert any('"GET /api/projects/ HTTP/1.1" 401' in line for line in lines), lines
    assert not any("/healthz" in line for line in lines), lines
