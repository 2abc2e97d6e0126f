"""`make run`, as the README promises it (scripts/run.sh, on the zero-set-up default): the web
server and a worker per core come up, the demo logins are printed, a job queued through the
site runs, and Ctrl-C stops everything."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.worker
def test_make_run_starts_two_workers_serves_runs_a_job_and_stops_on_ctrl_c(tmp_path):
    port = _free_port()
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env |= {"TASKWRIGHT_VAR_DIR": str(tmp_path / "var"), "PORT": str(port), "PYTHON": sys.executable, "WORKER_PROCESSES": "2"}
    output = tmp_path / "run.log"
    # Its own process group, as a terminal's foreground job is: Ctrl-C signals the whole group.
    run = subprocess.Popen(["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=output.open("w"), stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while "Taskwright is running" not in output.read_text():
            assert run.poll() is None and time.monotonic() < deadline, output.read_text()[-3000:]
            time.sleep(0.5)
        printed = output.read_text()
        assert f"http://127.0.0.1:{port}/" in printed and "Starting 2 Celery worker process(es)" in printed
        logins = {login["role"].lower(): login for login in json.loads((tmp_path / "var" / "demo_logins.json").read_text())}
        assert f"username: {logins['author']['username']}" in printed
        worker_log = (tmp_path / "var" / "log" / "worker.log").read_text()
        assert "worker1@" in worker_log and "worker2@" in worker_log

        # A trial batch of the demo task, started through the API as the demo author, runs on the workers.
        def call(path, body=None, token=None):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode() if body is not None else None,
                headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        author = logins["author"]
        token = call("/api/auth/token/", {"username": author["username"], "password": author["password"]})["token"]
        task = call("/api/tasks/", token=token)["results"][0]
        endpoint = call("/api/model-endpoints/", token=token)["results"][0]
        batch = call(f"/api/tasks/{task['id']}/batches/", {"endpoint": endpoint["id"]}, token=token)
        deadline = time.monotonic() + 120
        while not (progress := call(f"/api/batches/{batch['id']}/", token=token)["progress"])["is_finished"]:
            assert time.monotonic() < deadline, progress
            time.sleep(1)
        assert progress["completed"] == progress["total"] > 0, progress
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
        try:
            status = run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            status = None
        left = subprocess.run(["pgrep", "-g", str(run.pid)], capture_output=True, text=True).stdout.split()
        if left:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
    assert status == 130, output.read_text()[-3000:]
    assert left == [], f"still running 60 s after Ctrl-C: {left}"
    assert "starting it again" not in (tmp_path / "var" / "log" / "worker.log").read_text()


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_worker_count_is_refused_before_anything_starts(tmp_path, value):
    env = dict(os.environ, TASKWRIGHT_VAR_DIR=str(tmp_path / "var"), PORT=str(_free_port()), PYTHON=sys.executable, WORKER_PROCESSES=value)
    run = subprocess.run(["bash", "scripts/run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert f"WORKER_PROCESSES must be a whole number of worker processes, 1 or more (it is '{value}')." in run.stderr
    assert not (tmp_path / "var" / "db.sqlite3").exists() and "Applying migrations" not in run.stdout
