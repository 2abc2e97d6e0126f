from dataclasses import dataclass

import pytest

from accounts.models import Project, Role, User
from tests import factories

pytest_plugins = ["tests.worker", "tests.s3"]


@dataclass
class Team:
    project: Project
    author: User
    author2: User
    reviewer: User
    admin: User


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's deliberate slowness costs seconds per test user; what is hashed how is
    # Django's concern, not ours.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _model_egress_for_the_fake_server(settings, monkeypatch):
    # The fake model server listens on 127.0.0.1 and the `endpoint` fixture's key is in
    # FAKE_LLM_KEY: allow both, as an operator would (tests of the rules turn them off), here
    # and in the environment every worker or other subprocess a test starts inherits.
    settings.MODEL_ALLOW_PRIVATE_NETWORKS = True
    settings.MODEL_KEY_VARIABLES = ["FAKE_LLM_KEY"]
    monkeypatch.setenv("MODEL_ALLOW_PRIVATE_NETWORKS", "1")
    monkeypatch.setenv("MODEL_KEY_VARIABLES", "FAKE_LLM_KEY")


@pytest.fixture(autouse=True)
def _fresh_batch_context():
    # A test's rolled-back rows free their ids for the next test (SQLite): a batch or world a
    # worker thread read in one test must not stand in for another test's of the same id.
    from rollouts import agent

    agent._batches.clear()
    agent._worlds.clear()
    yield
    agent._batches.clear()
    agent._worlds.clear()


@pytest.fixture
def team(db) -> Team:
    project = factories.project("Corporate law — M&A")
    return Team(
        project=project,
        author=factories.member(project, Role.AUTHOR),
        author2=factories.member(project, Role.AUTHOR),
        reviewer=factories.member(project, Role.REVIEWER),
        admin=factories.member(project, Role.ADMIN),
    )


@pytest.fixture
def other_team(db) -> Team:
    project = factories.project("Other project")
    return Team(
        project=project,
        author=factories.member(project, Role.AUTHOR),
        author2=factories.member(project, Role.AUTHOR),
        reviewer=factories.member(project, Role.REVIEWER),
        admin=factories.member(project, Role.ADMIN),
    )


@pytest.fixture
def world(team):
    return factories.world(team.project, team.author)


@pytest.fixture
def env_task(team, world):
    return factories.env_task(world, team.author)


@pytest.fixture(scope="session")
def fake_llm_server():
    from tests.fake_llm import FakeLLMServer

    server = FakeLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_llm(fake_llm_server, settings):
    """The fake model server, emptied for this test, with retries made quick."""
    settings.LLM_BACKOFF_BASE = 0.01
    fake_llm_server.reset()
    yield fake_llm_server
    fake_llm_server.reset()


@pytest.fixture
def eager(settings):
    """Celery tasks run in-process, as they are sent."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def endpoint(db, fake_llm, monkeypatch):
    from llm.models import ModelEndpoint

    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-secret-key")
    return ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="FAKE_LLM_KEY",
        max_concurrency=4, connect_timeout=2, read_timeout=2, max_retries=3,
        price_input_per_mtok="1.00", price_output_per_mtok="2.00",
    )
