"""A worker thread keeps its database connection from one task to the next (Celery's
Django fixup would close it around every task), and closes it, as Django does around a
request, when it broke or grew older than CONN_MAX_AGE."""

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun, task_prerun
from django.db import connection

from config.celery import app
from rollouts.tasks import run_rollout


def run_a_task(fixup) -> None:
    """What a worker does around a task, as far as database connections go."""
    for hook, signal in ((fixup.on_task_prerun, task_prerun), (fixup.on_task_postrun, task_postrun)):
        hook(sender=run_rollout)
        signal.send(sender=run_rollout, task=run_rollout, task_id="t", args=(), kwargs={})
        connection.cursor().execute("SELECT 1")  # the task's own queries


@pytest.fixture
def fixup(monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.close()  # the next connection is opened with that age
    return DjangoWorkerFixup(app)


@pytest.mark.django_db(transaction=True)
def test_a_worker_thread_keeps_its_connection_across_tasks(fixup):
    run_a_task(fixup)
    first = connection.connection
    for _ in range(3):
        run_a_task(fixup)
    assert first is not None and connection.connection is first


@pytest.mark.django_db(transaction=True)
def test_a_broken_or_old_connection_is_replaced_before_the_next_task(fixup):
    if connection.vendor != "postgresql":
        pytest.skip("Django counts a SQLite connection as always usable (it is in the process)")
    run_a_task(fixup)
    first = connection.connection
    first.close()  # the database went away under it
    connection.errors_occurred = True  # (as a failed query marks it)
    run_a_task(fixup)
    second = connection.connection
    assert second is not first and not second.closed
    connection.close_at = 0  # older than CONN_MAX_AGE
    run_a_task(fixup)
    assert connection.connection is not second


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_database_dropped_between_tasks_is_replaced_not_failed_on(fixup):
    if connection.vendor != "postgresql":
        pytest.skip("needs a database server that can drop a connection")
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]  # settings.py turns the check on
    run_a_task(fixup)
    first = connection.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    import psycopg

    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])  # a restart, a failover, an idle timeout
    run_a_task(fixup)  # its queries run on a new connection
    assert connection.connection is not first
