"""An S3-compatible object store for the tests of the file paths (uploads and their
originals, pack builds and downloads, world export and import, the two-host test).

- The server: the one `.ci/run` started when TEST_S3_ENDPOINT_URL is set (with its bucket in
  TEST_S3_BUCKET); otherwise this session starts moto's standalone server (a dev requirement)
  on a free loopback port and creates the bucket. Either way it is a real HTTP server that
  boto3 talks to, in this process and in every worker subprocess a test starts.
- `s3_storage`: this test's files in that bucket, under a prefix of its own: settings'
  default storage is django-storages' S3Storage pointing there, and STORAGE_BACKEND,
  STORAGE_OPTIONS and the AWS credentials are in os.environ for the workers a test starts
  (tests/worker.py copies os.environ).
- `@pytest.mark.file_storage`: the test runs twice, on the local filesystem (a MEDIA_ROOT of
  its own) and on S3; the `file_storage` fixture says which and lists what was stored.
"""

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

S3_BACKEND = "storages.backends.s3.S3Storage"
REGION = "us-east-1"
# moto takes any credentials; these never reach a real account.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "taskwright-test", "AWS_SECRET_ACCESS_KEY": "taskwright-test-secret"}
START_TIMEOUT = 30


@dataclass
class S3Server:
    endpoint_url: str
    bucket: str
    process: subprocess.Popen | None = None
    log_path: Path | None = None

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name=REGION,
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])

    def keys(self, prefix: str = "") -> list[str]:
        """Every object's key under `prefix`, straight from the server (not through Django)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(server: S3Server) -> bool:
    try:
        server.client().list_buckets()
    except Exception:
        return False
    return True


def start_moto_server(log_dir: Path, *, bucket: str = "taskwright-test") -> S3Server:
    """moto's standalone S3 server (`moto_server`) in a subprocess, with `bucket` created."""
    port = _free_port()
    log_path = Path(log_dir) / "moto.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = S3Server(endpoint_url=f"http://127.0.0.1:{port}", bucket=bucket, process=process, log_path=log_path)
    deadline = time.monotonic() + START_TIMEOUT
    while not _answers(server):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"moto_server did not answer on port {port}:\n{log_path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)
    server.client().create_bucket(Bucket=bucket)
    return server


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    endpoint = os.environ.get("TEST_S3_ENDPOINT_URL")
    if endpoint:  # started by .ci/run, which created the bucket
        yield S3Server(endpoint_url=endpoint, bucket=os.environ.get("TEST_S3_BUCKET") or "taskwright-test")
        return
    server = start_moto_server(tmp_path_factory.mktemp("moto"))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class S3Files:
    """This test's part of the bucket."""

    server: S3Server
    prefix: str
    options: dict = field(default_factory=dict)

    def keys(self) -> list[str]:
        """Names (relative to the test's prefix) of the objects stored, read from the server."""
        return [key.removeprefix(f"{self.prefix}/") for key in self.server.keys(f"{self.prefix}/")]

    def worker_environment(self) -> dict[str, str]:
        """What a process needs in its environment to keep its files here, as an operator sets it."""
        return {"STORAGE_BACKEND": S3_BACKEND, "STORAGE_OPTIONS": json.dumps(self.options), **CREDENTIALS}


@pytest.fixture
def s3_storage(s3_server, settings, monkeypatch) -> S3Files:
    """Django's default storage is S3 for this test (and for the workers it starts)."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    options = {"bucket_name": s3_server.bucket, "endpoint_url": s3_server.endpoint_url, "region_name": REGION,
               "location": prefix, "file_overwrite": False}
    files = S3Files(server=s3_server, prefix=prefix, options=options)
    for name, value in files.worker_environment().items():
        monkeypatch.setenv(name, value)
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": S3_BACKEND, "OPTIONS": options}}
    return files


@dataclass
class FileStorage:
    """Where a `file_storage` test keeps its files: "filesystem" or "s3"."""

    kind: str
    media_root: Path
    s3: S3Files | None = None

    def stored(self) -> list[str]:
        """Every file stored, by its storage name, read from the disk or the S3 server itself."""
        if self.s3 is not None:
            return self.s3.keys()
        return sorted(p.relative_to(self.media_root).as_posix() for p in self.media_root.rglob("*") if p.is_file())


@pytest.fixture
def file_storage(request, settings, tmp_path) -> FileStorage:
    kind = getattr(request, "param", "filesystem")
    settings.MEDIA_ROOT = tmp_path / "media"
    s3 = request.getfixturevalue("s3_storage") if kind == "s3" else None
    return FileStorage(kind=kind, media_root=settings.MEDIA_ROOT, s3=s3)


def pytest_configure(config):
    config.addinivalue_line("markers", "file_storage: runs the test on the local filesystem and on an S3-compatible store")


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("file_storage") is None:
        return
    if "file_storage" not in metafunc.fixturenames:
        metafunc.fixturenames.insert(0, "file_storage")  # before the fixtures that store files
    metafunc.parametrize("file_storage", ["filesystem", "s3"], indirect=True)
