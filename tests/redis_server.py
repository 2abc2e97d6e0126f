"""A test's own redis-server on a free port, with no persistence: stop() kills it as a
crash would, and start() brings it back empty. Skips the test where redis-server is not
installed."""

import shutil
import socket
import subprocess
import time

import pytest
import redis


class RedisServer:
    def __init__(self, directory) -> None:
        self.binary = shutil.which("redis-server")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
             str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while not _pings(client):
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer on port {self.port} within 10 s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # as a crash: nothing is saved
            self.process.wait(timeout=10)


def _pings(client) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


@pytest.fixture
def own_redis(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()
