"""core.jobs: a worker process keeps the heartbeats of the jobs it runs fresh, from one
thread, and only while they run; a job is taken over only once its heartbeat is stale."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from core import jobs
from packs.models import Pack, PackStatus
from packs.services import BUILD_STATES
from tests.rollouts.test_worker_rollouts import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the pulse thread has its own connection: it must see the rows


@pytest.fixture
def pulse(settings, monkeypatch):
    settings.JOB_STALE_SECONDS = 0.4  # a beat every 0.1 s
    fresh = jobs._Pulse()
    fresh.enabled = True
    monkeypatch.setattr(jobs, "_pulse", fresh)
    yield fresh
    fresh.stop()  # (and its database connection closed, so the test database can go)


def building_pack(team, **values) -> Pack:
    return Pack.objects.create(project=team.project, name="p", version=Pack.objects.count() + 1, status=PackStatus.BUILDING, **values)


def test_a_running_jobs_heartbeat_is_kept_fresh_only_while_it_runs(team, pulse):
    long_ago = timezone.now() - timedelta(hours=1)
    pack, other = building_pack(team, heartbeat_at=long_ago), building_pack(team, heartbeat_at=long_ago)

    with jobs.kept_alive(Pack, pack.pk, states=BUILD_STATES):
        wait_until(lambda: Pack.objects.get(pk=pack.pk).heartbeat_at > long_ago, timeout=5, what="the first beat")
        first = Pack.objects.get(pk=pack.pk).heartbeat_at
        wait_until(lambda: Pack.objects.get(pk=pack.pk).heartbeat_at > first, timeout=5, what="the next beat")
    assert Pack.objects.get(pk=other.pk).heartbeat_at == long_ago  # not this process's job

    threading.Event().wait(0.2)  # (a beat that read the job just before the block ended may still land)
    ended = Pack.objects.get(pk=pack.pk).heartbeat_at
    threading.Event().wait(0.5)
    assert Pack.objects.get(pk=pack.pk).heartbeat_at == ended  # no beats once the block is over
    assert pulse.thread.is_alive()  # one thread, kept for the next job


def test_a_job_that_ended_is_not_beaten_back_to_life(team, pulse):
    pack = building_pack(team, heartbeat_at=timezone.now())
    with jobs.kept_alive(Pack, pack.pk, states=BUILD_STATES):
        Pack.objects.filter(pk=pack.pk).update(status=PackStatus.FAILED, heartbeat_at=None)
        threading.Event().wait(0.3)
    assert Pack.objects.get(pk=pack.pk).heartbeat_at is None


def test_outside_a_worker_nothing_beats(team, settings, monkeypatch):
    settings.JOB_STALE_SECONDS = 0.4
    monkeypatch.setattr(jobs, "_pulse", jobs._Pulse())  # (not enabled: a web process, a shell, an eager task)
    pack = building_pack(team, heartbeat_at=None)
    with jobs.kept_alive(Pack, pack.pk, states=BUILD_STATES):
        threading.Event().wait(0.3)
    assert Pack.objects.get(pk=pack.pk).heartbeat_at is None and jobs._pulse.thread is None


def test_a_job_is_taken_over_only_once_its_heartbeat_is_stale(team, settings):
    settings.JOB_STALE_SECONDS = 60
    now = timezone.now()
    alive = building_pack(team, attempts=1, started_at=now - timedelta(hours=5), heartbeat_at=now - timedelta(seconds=50))
    dead = building_pack(team, attempts=1, started_at=now - timedelta(minutes=2), heartbeat_at=now - timedelta(seconds=70))
    exhausted = building_pack(team, attempts=3, heartbeat_at=now - timedelta(seconds=70))
    exhausted_alive = building_pack(team, attempts=3, heartbeat_at=now)

    def claim(pack):
        return jobs.claim_job(Pack, pack.pk, states=BUILD_STATES, max_attempts=3, gave_up="Gave up.")

    assert [claim(p) for p in (alive, dead, exhausted, exhausted_alive)] == [False, True, False, False]
    got = {p.pk: (p.status, p.attempts, p.error) for p in Pack.objects.all()}
    assert got == {
        alive.pk: (PackStatus.BUILDING, 1, ""),  # running five hours, alive all along: left alone
        dead.pk: (PackStatus.BUILDING, 2, ""),  # taken over
        exhausted.pk: (PackStatus.FAILED, 3, "Gave up."),
        exhausted_alive.pk: (PackStatus.BUILDING, 3, ""),  # its last attempt is still running
    }
    assert claim(dead) is False  # its new claim made it alive again
