"""The per-endpoint cap holds across processes: two separate worker processes, each
with many threads calling the same endpoint, never have more calls in flight together
than the cap. A process keeps a Redis slot briefly for its own next call and gives it
back when idle or when the slot is old."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from django.db import connection

from llm.models import ModelCall
from tests.fake_llm import Reply
from tests.redis_server import own_redis  # noqa: F401
from tests.worker import database_url_for_subprocess

CALLER = textwrap.dedent(
    """
    import os, sys, django
    from concurrent.futures import ThreadPoolExecutor
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from llm.client import chat
    from llm.models import ModelEndpoint

    endpoint = ModelEndpoint.objects.get(pk=int(sys.argv[1]))
    def call(i):
        return chat(endpoint=endpoint, messages=[{"role": "user", "content": f"call {i}"}], purpose="drafting").text
    with ThreadPoolExecutor(max_workers=6) as pool:
        print(list(pool.map(call, range(6))))
    """
)


@pytest.mark.django_db(transaction=True)
def test_cap_is_shared_by_two_worker_processes(endpoint, fake_llm):
    endpoint.max_concurrency = 3
    endpoint.save()
    fake_llm.responder = lambda request: Reply(content="ok", delay=0.3)
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "DEBUG": "1",
        "MODEL_ALLOW_PRIVATE_NETWORKS": "1",
        "MODEL_KEY_VARIABLES": "FAKE_LLM_KEY",
    }
    root = Path(__file__).resolve().parents[2]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CALLER, str(endpoint.pk)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), outputs
    assert len(fake_llm.requests) == 12
    assert fake_llm.max_in_flight == 3  # saturated, never above the cap
    assert ModelCall.objects.filter(outcome="ok").count() == 12


@pytest.fixture
def redis_slots(settings, monkeypatch):
    """Slots in Redis (as in production and CI), with a short keeping time."""
    from llm import concurrency

    url = os.environ.get("REDIS_URL") or os.environ.get("LLM_SLOTS_REDIS_URL")
    if not url:
        pytest.skip("needs Redis: set REDIS_URL (.ci/run does)")
    settings.LLM_SLOTS_REDIS_URL = url
    monkeypatch.setattr(concurrency, "HOLD_SECONDS", 0.5)
    monkeypatch.setattr(concurrency, "_redis_client", None)
    concurrency._kept.clear()
    client = concurrency._redis()
    # Endpoint ids start again with each test database: leases of an earlier run's endpoints are not this one's.
    for key in client.scan_iter("taskwright:llm-slots:*"):
        client.delete(key)
    yield client
    concurrency._give_back_all()
    concurrency._kept.clear()


def _leases(client, endpoint) -> list[bytes]:
    return client.zrange(f"taskwright:llm-slots:{endpoint.pk}", 0, -1)


def _ask(endpoint, text="hi"):
    from llm.client import chat

    return chat(endpoint=endpoint, messages=[{"role": "user", "content": text}], purpose="drafting").text


def test_a_process_reuses_its_slot_for_its_next_call_then_gives_it_back(endpoint, fake_llm, redis_slots):
    _ask(endpoint)
    first = _leases(redis_slots, endpoint)
    assert len(first) == 1  # kept for this process's next call
    _ask(endpoint)
    assert _leases(redis_slots, endpoint) == first  # the same lease: no round trip to take a new one
    time.sleep(1.2)  # idle for longer than HOLD_SECONDS (0.5 here): given back, other processes can have it
    assert _leases(redis_slots, endpoint) == []


def test_a_kept_slot_is_given_back_once_it_is_old_even_when_busy(endpoint, fake_llm, redis_slots):
    _ask(endpoint)
    first = _leases(redis_slots, endpoint)
    fake_llm.responder = lambda request: Reply(content="slow", delay=0.6)  # the call outlives the slot's keeping time
    _ask(endpoint)
    time.sleep(0.1)
    assert _leases(redis_slots, endpoint) == []  # released on return: another process waiting for it gets it now
    fake_llm.responder = lambda request: Reply(content="quick")
    _ask(endpoint)
    assert len(_leases(redis_slots, endpoint)) == 1 and _leases(redis_slots, endpoint) != first


@pytest.mark.django_db(transaction=True)
def test_own_calls_hand_slots_over_within_the_cap(endpoint, fake_llm, redis_slots):
    from concurrent.futures import ThreadPoolExecutor

    endpoint.max_concurrency = 2
    endpoint.save()
    fake_llm.responder = lambda request: Reply(content="ok", delay=0.2)
    def ask(i):
        try:
            return _ask(endpoint, f"call {i}")
        finally:
            connection.close()  # this pool thread's own

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(ask, range(12)))
    leases = _leases(redis_slots, endpoint)
    assert (answers, fake_llm.max_in_flight, len(leases) <= 2) == (["ok"] * 12, 2, True), (fake_llm.max_in_flight, leases)


EXITING_CALLER = textwrap.dedent(
    """
    import os, sys, django
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from llm.client import chat, load_sdks
    from llm.models import ModelEndpoint

    load_sdks()  # as a worker does when it starts (config.celery): the first call alone may outlast the slot's keeping
    chat(endpoint=ModelEndpoint.objects.get(pk=int(sys.argv[1])), messages=[{"role": "user", "content": "hi"}], purpose="drafting")
    from llm import concurrency
    print(sum(len(kept.free) for kept in concurrency._kept.values()))  # kept for a next call that never comes
    from django.db import connections
    connections.close_all()
    """
)


@pytest.mark.django_db(transaction=True)
def test_a_process_that_exits_gives_its_kept_slots_back(endpoint, fake_llm, redis_slots, settings):
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "DEBUG": "1", "LLM_SLOTS_REDIS_URL": settings.LLM_SLOTS_REDIS_URL,
           "MODEL_ALLOW_PRIVATE_NETWORKS": "1", "MODEL_KEY_VARIABLES": "FAKE_LLM_KEY"}
    done = subprocess.run([sys.executable, "-c", EXITING_CALLER, str(endpoint.pk)], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert _leases(redis_slots, endpoint) == []  # at once, not when the lease runs out


def test_redis_failing_to_take_a_slot_back_loses_no_answer(endpoint, fake_llm, redis_slots, monkeypatch, caplog):
    import redis

    from llm import concurrency

    monkeypatch.setattr(concurrency, "HOLD_SECONDS", 0)  # every slot goes back to Redis at once
    _ask(endpoint)  # loads the scripts

    def broken(*args, **kwargs):
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setitem(concurrency._scripts, "release", broken)
    assert _ask(endpoint, "still answered") == "OK"
    assert "could not give an endpoint slot back to Redis" in caplog.text
    assert ModelCall.objects.filter(outcome="ok").count() == 2
    assert all(kept.in_use == 0 for kept in concurrency._kept.values())


@pytest.fixture
def slots_on_own_redis(settings, monkeypatch, own_redis):  # noqa: F811 (fixture)
    """Slots in the test's own Redis server, which the test may stop and start."""
    from llm import concurrency

    concurrency._give_back_all()  # (slots an earlier test kept go back to their own Redis)
    concurrency._kept.clear()
    settings.LLM_SLOTS_REDIS_URL = own_redis.url
    # A client and scripts of its own, both put back afterwards (the scripts are bound to their client).
    monkeypatch.setattr(concurrency, "_redis_client", None)
    monkeypatch.setattr(concurrency, "_scripts", {})
    concurrency._kept.clear()
    yield own_redis
    concurrency._give_back_all()
    concurrency._kept.clear()


def test_a_call_waits_for_redis_to_come_back_instead_of_failing(endpoint, fake_llm, slots_on_own_redis):
    """A Redis restart while a rollout runs: its next model call waits for the slot store."""
    import threading

    fake_llm.responder = lambda request: Reply(content="after the restart")
    assert _ask(endpoint) == "after the restart"  # (connected, script loaded)
    from llm import concurrency

    concurrency._give_back_all()
    concurrency._kept.clear()
    slots_on_own_redis.stop()
    restart = threading.Timer(1.0, slots_on_own_redis.start)  # back, empty, a second later
    restart.start()
    try:
        started = time.monotonic()
        assert _ask(endpoint) == "after the restart"
        assert 0.9 < time.monotonic() - started < 10
    finally:
        restart.join()


def test_a_call_gives_up_when_redis_stays_away_past_the_slot_wait(endpoint, slots_on_own_redis):
    from llm import concurrency
    from llm.errors import ModelError

    slots_on_own_redis.stop()
    slot = concurrency.endpoint_slot(endpoint_id=endpoint.pk, cap=2, lease_seconds=5, wait_seconds=1.0)
    with pytest.raises(ModelError, match="Could not reach Redis for a slot on this model endpoint") as caught, slot:
        pass
    assert caught.value.kind == "timeout"
