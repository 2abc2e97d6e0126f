"""core.jobs: a worker process keeps the heartbeats of the jobs it runs fresh, from one
thread, and only while they run; a job is taken over only once its heartbeat is stale."""

import threading
from datetime import UTC, datetime, timedelta

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
    assert not any(pulse.jobs.values())  # no longer beaten
    assert pulse.thread.is_alive()  # one thread, kept for the next job


def test_a_job_that_ended_is_not_beaten_back_to_life(team, pulse):
    ended, running = building_pack(team, heartbeat_at=timezone.now()), building_pack(team, heartbeat_at=None)
    with jobs.kept_alive(Pack, ended.pk, states=BUILD_STATES), jobs.kept_alive(Pack, running.pk, states=BUILD_STATES):
        Pack.objects.filter(pk=ended.pk).update(status=PackStatus.FAILED, heartbeat_at=None)
        after = timezone.now()
        wait_until(lambda: (Pack.objects.get(pk=running.pk).heartbeat_at or after) > after, timeout=5, what="a beat after the job ended")
    assert Pack.objects.get(pk=ended.pk).heartbeat_at is None  # the beats that reached `running` passed it by


def test_the_pulse_outlives_a_failed_beat(team, pulse, monkeypatch):
    failures = iter([RuntimeError("the database went away")])

    def flaky() -> None:
        if (error := next(failures, None)) is not None:
            raise error

    monkeypatch.setattr(jobs, "close_old_connections", flaky)
    pack = building_pack(team, heartbeat_at=None)
    with jobs.kept_alive(Pack, pack.pk, states=BUILD_STATES):
        wait_until(lambda: Pack.objects.get(pk=pack.pk).heartbeat_at is not None, timeout=5, what="a beat after the failed one")
    assert pulse.thread.is_alive()


def test_a_run_that_raises_leaves_the_job_free_for_its_retry(team, settings):
    """A task retried after a database error must not find its own fresh heartbeat."""
    settings.JOB_STALE_SECONDS = 60
    pack = building_pack(team, attempts=1, heartbeat_at=timezone.now())
    with pytest.raises(ConnectionError), jobs.kept_alive(Pack, pack.pk, states=BUILD_STATES):
        raise ConnectionError("the database went away")
    assert Pack.objects.get(pk=pack.pk).heartbeat_at is None
    assert jobs.claim_job(Pack, pack.pk, states=BUILD_STATES, max_attempts=3, gave_up="Gave up.")


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


def test_a_worker_sends_again_the_running_jobs_that_went_stale_every_so_often(settings, monkeypatch):
    from config import celery

    settings.JOB_STALE_SECONDS = 0.1
    calls: list = []
    monkeypatch.setattr(celery, "recover_jobs", lambda *, queued_for: calls.append(queued_for))
    stopped = threading.Event()
    watcher = threading.Thread(target=celery._resend_stale_jobs, args=(stopped,))
    watcher.start()
    try:
        wait_until(lambda: len(calls) >= 3, timeout=5, what="three looks")
    finally:
        stopped.set()
        watcher.join(timeout=5)
    assert set(calls) == {None}  # only the running ones: a queued job waiting in a long queue is not sent again


def test_recovering_only_the_running_ones_leaves_queued_jobs_alone(team, settings, monkeypatch):
    from packs import tasks
    from packs.services import packs_recover

    settings.JOB_STALE_SECONDS = 60
    long_ago = timezone.now() - timedelta(hours=1)
    building_pack(team, heartbeat_at=long_ago)  # dead
    building_pack(team, heartbeat_at=timezone.now())  # alive
    queued = building_pack(team)
    Pack.objects.filter(pk=queued.pk).update(status=PackStatus.QUEUED, created_at=long_ago)
    sent: list[int] = []
    monkeypatch.setattr(tasks.build_pack, "delay", sent.append)
    assert packs_recover(queued_for=None) == 1  # the dead one
    assert packs_recover() == 2  # and the one queued an hour ago
    assert len(sent) == 3


def _database_now():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        value = cursor.fetchone()[0]
    # (SQLite answers in text, in UTC)
    return datetime.fromisoformat(value).replace(tzinfo=UTC) if isinstance(value, str) else value


def test_claims_beats_and_staleness_go_by_the_databases_clock_not_the_hosts(team, settings, monkeypatch):
    """A worker whose host clock runs an hour ahead (workers on several hosts) neither takes
    over a job another worker is beating nor stamps its own heartbeats in the future."""
    settings.JOB_STALE_SECONDS = 60
    db_now = _database_now()
    monkeypatch.setattr(timezone, "now", lambda: db_now + timedelta(hours=1))  # this host's clock
    alive = building_pack(team, attempts=1, started_at=db_now - timedelta(minutes=5), heartbeat_at=db_now - timedelta(seconds=10))
    queued = Pack.objects.create(project=team.project, name="q", version=99, status=PackStatus.QUEUED)

    def claim(pack):
        return jobs.claim_job(Pack, pack.pk, states=BUILD_STATES, max_attempts=3, gave_up="Gave up.")

    assert claim(alive) is False  # fresh by the database's clock, though an hour old by the host's
    assert claim(queued) is True
    claimed = Pack.objects.get(pk=queued.pk)
    assert abs(claimed.heartbeat_at - db_now) < timedelta(seconds=30) and claimed.started_at == claimed.heartbeat_at

    pulse = jobs._Pulse()  # (not enabled: beaten by hand here)
    pulse.add(Pack, BUILD_STATES, alive.pk)
    pulse.beat()
    assert abs(Pack.objects.get(pk=alive.pk).heartbeat_at - db_now) < timedelta(seconds=30)
    assert {p.pk for p in Pack.objects.filter(jobs.stale(BUILD_STATES))} == set()


def test_a_job_past_its_deadline_is_ended_by_the_heartbeat_whatever_its_thread_does(team, pulse):
    """Celery's thread pool enforces no time limit: a run that hangs is ended by its deadline,
    checked by the heartbeat thread, while a job within its deadline is beaten as usual."""
    db_now = _database_now()
    hung = building_pack(team, attempts=1, started_at=db_now - timedelta(seconds=1), heartbeat_at=db_now)
    young = building_pack(team, attempts=1, started_at=db_now + timedelta(hours=1), heartbeat_at=db_now)
    deadline = jobs.Deadline(timedelta(seconds=1), "Stopped at its deadline (it hung).")
    with jobs.kept_alive(Pack, hung.pk, states=BUILD_STATES, deadline=deadline), \
            jobs.kept_alive(Pack, young.pk, states=BUILD_STATES, deadline=deadline):
        # The block stands for a thread stuck in a call that never returns.
        wait_until(lambda: Pack.objects.get(pk=hung.pk).status == PackStatus.FAILED, timeout=5, what="the deadline ends the job")
        wait_until(lambda: Pack.objects.get(pk=young.pk).heartbeat_at > db_now, timeout=5, what="the other job is beaten")
    hung.refresh_from_db()
    assert (hung.error, hung.finished_at is not None) == ("Stopped at its deadline (it hung).", True)
    assert Pack.objects.get(pk=young.pk).status == PackStatus.BUILDING
    assert not any(pulse.deadlines.values())  # forgotten with their jobs
