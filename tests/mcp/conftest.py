"""The MCP server driven by the official MCP client, against servers in real processes:
`manage.py mcp_world` over stdio, and the web app under uvicorn (ASGI) over streamable
HTTP, both on pytest-django's test database. Tests commit their data (transactional_db)
so those processes see it.

The world is tests/workspace's data room, which holds every format."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.conf import settings
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from accounts.models import User
from authoring import services as authoring_services
from authoring.models import World
from authoring.services.task_files import task_input_file_add_bytes
from tests.conftest import Team
from tests.worker import database_url_for_subprocess
from tests.workspace.conftest import build_data_room
from workspace.models import Overlay
from workspace.services import overlay_create

SERVER_START_TIMEOUT = 30
# In every server process's environment, as a provider key would be: no answer may ever show it.
CANARY_KEY_ENV, CANARY_KEY = "TASKWRIGHT_TEST_CANARY_KEY", "sk-canary-7f3a9c1e5b2d4086"
CALL_TIMEOUT = 30  # seconds for any one MCP request


@dataclass
class Room:
    team: Team
    world: World
    overlay: Overlay  # a sandbox: authors write into it
    other_team: Team
    other_world: World
    other_overlay: Overlay
    trial_overlay: Overlay  # a trial run's, of a task with an input file: read-only, with the file
    task_file: str  # the path of that input file


TASK_FILE = "Inputs/Checklist.md"


@pytest.fixture
def room(transactional_db, team, other_team) -> Room:
    """The data room with a sandbox and a trial run's overlay, and another project's world with its own overlay."""
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Project Lighthouse")
    build_data_room(world, team.author)
    other_world = authoring_services.world_create(project_id=other_team.project.pk, user=other_team.author, title="Other deal")
    authoring_services.document_create(world=other_world, user=other_team.author, path="Secret/Other deal.md", content="Secret price: $99m")
    task = authoring_services.env_task_create(world=world, user=team.author, title="Check the consents", prompt="Use the checklist.")
    task_input_file_add_bytes(env_task=task, user=team.author, path=TASK_FILE, data=b"# Checklist\n\n- Landlord consent\n")
    return Room(
        team=team, world=world, overlay=overlay_create(world=world, user=team.author, label="mcp sandbox", purpose="sandbox"),
        other_team=other_team, other_world=other_world,
        other_overlay=overlay_create(world=other_world, user=other_team.author, label="other trial"),
        trial_overlay=overlay_create(world=world, user=team.author, label="Rollout 1", purpose="rollout", env_task=task),
        task_file=TASK_FILE,
    )


def token_for(user: User) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def subprocess_env() -> dict[str, str]:
    """The environment of a server process: this one's, on the test database."""
    return {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
        CANARY_KEY_ENV: CANARY_KEY,
    }


def in_session(transport, work: Callable[[Client], Awaitable[Any]], **client_options) -> Any:
    """Open one MCP client session over `transport`, run `await work(client)`, return its result."""

    async def main():
        with anyio.fail_after(SERVER_START_TIMEOUT + CALL_TIMEOUT):
            async with Client(transport, read_timeout_seconds=CALL_TIMEOUT, **client_options) as client:
                return await work(client)

    return anyio.run(main)


def text_of(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


# --- stdio ----------------------------------------------------------------------------------

@dataclass
class StdioServer:
    """`manage.py mcp_world` as an MCP client launches it; its stderr goes to `log_path`."""

    log_path: Path

    def transport(self, *args: object):
        params = StdioServerParameters(
            command=sys.executable, args=["manage.py", "mcp_world", *map(str, args)], env=subprocess_env(), cwd=settings.BASE_DIR,
        )
        return _StdioTransport(params, self.log_path)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class _StdioTransport:
    """stdio_client with the server's stderr in a file (pytest's captured stderr has no fd)."""

    def __init__(self, params: StdioServerParameters, log_path: Path) -> None:
        self.params, self.log_path = params, log_path

    async def __aenter__(self):
        self._log = self.log_path.open("a")
        self._inner = stdio_client(self.params, errlog=self._log)
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc):
        try:
            return await self._inner.__aexit__(*exc)
        finally:
            self._log.close()


@pytest.fixture
def stdio(transactional_db, tmp_path) -> StdioServer:
    return StdioServer(log_path=tmp_path / "mcp_world.log")


# --- streamable HTTP under uvicorn ------------------------------------------------------------

@dataclass
class HttpServer:
    base_url: str
    log_path: Path

    def url(self, kind: str, pk: int) -> str:
        return f"{self.base_url}/mcp/{kind}/{pk}/"

    def transport(self, url: str, token: str | None = None, **options):
        return http_transport(url, token, **options)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def http_transport(url: str, token: str | None = None, *, scheme: str = "Bearer", statuses: list | None = None):
    """The SDK's streamable HTTP transport sending `token`; every HTTP status it gets is
    appended to `statuses`."""

    async def record(response):
        if statuses is not None:
            statuses.append(response.status_code)

    headers = {"Authorization": f"{scheme} {token}"} if token else {}
    client = httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT, event_hooks={"response": [record]})
    return _OwnedClientTransport(client, streamable_http_client(url, http_client=client))


class _OwnedClientTransport:
    """streamable_http_client over an httpx2 client this transport also closes."""

    def __init__(self, client: httpx2.AsyncClient, inner) -> None:
        self.client, self.inner = client, inner

    async def __aenter__(self):
        await self.client.__aenter__()
        return await self.inner.__aenter__()

    async def __aexit__(self, *exc):
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            await self.client.__aexit__(None, None, None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(process: subprocess.Popen, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with code {process.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"uvicorn did not listen on port {port} within {SERVER_START_TIMEOUT}s:\n{log_path.read_text(errors='replace')}")


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, tmp_path_factory) -> Iterator[HttpServer]:
    """config.asgi under uvicorn in a subprocess, on the test database, for the whole session."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("uvicorn") / "uvicorn.log"
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
               "--lifespan", "off", "--log-level", "warning"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    try:
        _wait_for_port(process, port, log_path)
        yield HttpServer(base_url=f"http://127.0.0.1:{port}", log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def http(asgi_server, transactional_db) -> HttpServer:
    return asgi_server
