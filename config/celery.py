import importlib
import logging
import os
import sys
import threading
from datetime import timedelta

import redis.exceptions
from celery import Celery
from celery import Task as CeleryTask
from celery.signals import task_postrun, task_prerun, worker_init, worker_ready
from celery.worker.request import Request
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("taskwright", task_cls="config.celery:Task")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
logger = logging.getLogger(__name__)


class BrokerLossSafeRequest(Request):
    """A job's message acknowledged (or rejected) after the worker lost its broker connection
    and reconnected: the channel the message came on is closed, and kombu's Redis transport,
    asked to reach Redis through it, can fail with AttributeError ('NoneType' object has no
    attribute 'hostname': the closed connection's transport has no client any more, see
    celery/kombu#582), which Celery does not take for a connection error; met on the
    worker's event loop, it stopped the worker ("Unrecoverable error", issue 18). The message
    needs nothing more: the worker put it back in its queue when the connection dropped (or
    it comes back after the visibility timeout), and the job's claim makes its redelivery a
    no-op."""

    def acknowledge(self) -> None:
        try:
            super().acknowledge()
        except AttributeError:
            logger.warning("Could not acknowledge %s: its broker connection was closed (it was requeued then).", self.id)
            self.acknowledged = True

    def reject(self, requeue: bool = False) -> None:
        try:
            super().reject(requeue=requeue)
        except AttributeError:
            logger.warning("Could not reject %s: its broker connection was closed (it was requeued then).", self.id)
            self.acknowledged = True


class Task(CeleryTask):
    Request = BrokerLossSafeRequest


_connparams = kombu_redis.Channel._connparams


def _connparams_of_an_open_connection(self, asynchronous=False):
    """A channel whose broker connection is gone asks for a new Redis client when it closes
    (to put its prefetched messages back) or acknowledges a job: kombu then fails with
    AttributeError ('NoneType' object has no attribute 'hostname' / 'client'), which Celery
    does not take for a connection error, and the worker stopped ("Unrecoverable error",
    issue 18; reproduced by tests/rollouts/test_worker_faults.py under load). Raised as the
    connection error it is, Celery's own handling takes over: it reconnects, and the
    messages not put back stay in Redis's unacked hash until the visibility sweep hands
    them out again (the jobs' claims make a second delivery a no-op)."""
    if self.connection is None or self.connection.client is None:
        raise redis.exceptions.ConnectionError("The broker connection of this channel is closed.")
    return _connparams(self, asynchronous)


kombu_redis.Channel._connparams = _connparams_of_an_open_connection


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(task=None, **kwargs) -> None:
    """Around each task, as around each request: a connection that broke, or is older than
    CONN_MAX_AGE, is closed (the next query opens a new one); a healthy one is kept
    (settings.CELERY_DB_REUSE_MAX). An eager task runs inside its caller's connection."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@worker_init.connect
def _switch_interval(**kwargs) -> None:
    """How long a worker thread waits for the interpreter lock before it makes the running
    thread hand it over (settings.WORKER_SWITCH_INTERVAL; pool processes forked later keep it)."""
    from django.conf import settings

    if settings.WORKER_SWITCH_INTERVAL > 0:
        sys.setswitchinterval(settings.WORKER_SWITCH_INTERVAL)


# What a worker's tasks import on first use, imported as it starts: the agent loop alone is
# ~0.2 s of CPU, which a worker's first few dozen rollouts would otherwise wait on together.
WORKER_IMPORTS = ("rollouts.agent", "rollouts.grading.services", "authoring.services.drafting", "packs.services")
# The queues whose jobs call models (settings.CELERY_TASK_ROUTES).
MODEL_QUEUES = {"drafting", "rollouts", "grading"}


@worker_init.connect
def _beat_job_heartbeats(**kwargs) -> None:
    from core.jobs import enable_pulse

    enable_pulse()


@worker_init.connect
def _import_task_code(sender=None, **kwargs) -> None:
    for name in WORKER_IMPORTS:
        importlib.import_module(name)
    # The model SDKs load lazily (llm.client.load_sdks); a worker that takes model calls
    # loads them now rather than inside its first call, which holds an endpoint slot.
    consumed = set(sender.app.amqp.queues.consume_from) if sender is not None else MODEL_QUEUES
    if consumed & MODEL_QUEUES:
        from llm.client import load_sdks

        load_sdks()


# Each sends again the jobs of one kind whose broker message may be lost: queued for a while,
# or running with a stale heartbeat (the filesystem broker never redelivers). The claims
# make a message too many harmless (core.jobs; the rollouts' heartbeat).
RECOVERIES = (
    "authoring.services.drafting.draft_jobs_recover",
    "authoring.services.drafting.skeleton_proposals_recover",
    "packs.services.packs_recover",
    "rollouts.services.rollouts_recover",
    "rollouts.grading.services.grades_recover",
    "verification.services.probe_runs_recover",
)


def recover_jobs(*, queued_for: timedelta | None) -> int:
    """Run every recovery; one that fails is logged and the others still run.
    `queued_for=None`: only the running jobs whose heartbeat is stale."""
    sent = 0
    for path in RECOVERIES:
        module, name = path.rsplit(".", 1)
        try:
            sent += getattr(importlib.import_module(module), name)(queued_for=queued_for)
        except Exception:
            logger.exception("%s failed", path)
    return sent


def _declare_queues() -> None:
    """Declare every queue with its binding again. A Redis that lost its data lost kombu's
    bindings too, and a message published to an exchange with no binding is dropped; the
    producers' own declarations are cached per process, and the consumers declare theirs
    again only when they reconnect (kombu's backoff reaches 30 s)."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in app.amqp.queues.values():
            queue(channel).declare()


def _recover_everything() -> None:
    """After the broker lost its messages: every queued job is sent again, from the watch's
    own thread, which then closes its database connection (it may wait days for the next)."""
    from django.db import connections

    try:
        _declare_queues()  # before the jobs are read, so a job a web request queues meanwhile is covered either way
        recover_jobs(queued_for=timedelta(0))
    finally:
        connections.close_all()


def _resend_stale_jobs(stopped: threading.Event) -> None:
    """Every JOB_STALE_SECONDS: send again the running jobs whose heartbeat went stale. Their
    worker died, and the message that came back for them may have been dropped while the
    heartbeat still looked fresh (a prefork child's job comes back at once), or lost with a
    filesystem broker."""
    from django.conf import settings
    from django.db import connections

    while not stopped.wait(settings.JOB_STALE_SECONDS):
        try:
            recover_jobs(queued_for=None)
        finally:
            connections.close_all()


RECOVER_AGAIN_SECONDS = 75


def _recover_queued_once() -> None:
    from django.db import connections

    try:
        recover_jobs(queued_for=timedelta(minutes=1))
    finally:
        connections.close_all()


@worker_ready.connect
def _recover_jobs(**kwargs) -> None:
    """As a worker starts: send again what may be lost; then, from then on, the running jobs
    that go stale, and, on a Redis broker, every queued job after a loss of its data; and
    keep the messages it holds from being handed out again while it lives (core.broker)."""
    from django.conf import settings

    from core.broker import BrokerWatch, MessageLease, held_delivery_tags, is_redis, mark_was_missing

    url = settings.CELERY_BROKER_URL
    lost = False
    if is_redis(url):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        index_key = options.get("global_keyprefix", "") + options.get("unacked_index_key", "unacked_index")
        MessageLease(url, options["visibility_timeout"] / 6, index_key, held_delivery_tags).start()
    if is_redis(url) and settings.BROKER_WATCH_SECONDS > 0:
        watch = BrokerWatch(url, settings.BROKER_WATCH_SECONDS, _recover_everything)
        try:
            lost = mark_was_missing(watch.client)  # a first start, or the broker lost its data before this one
        except Exception:
            logger.exception("Could not mark the broker.")
        watch.start()
    # After a loss every queued job's message is gone, however recently it was sent.
    recover_jobs(queued_for=timedelta(0) if lost else timedelta(minutes=1))
    # Once more a while later: a job a killed worker queued in the database just before it
    # died (a grade whose rollout it finished) never had its message sent, and was too young
    # for the look above.
    later = threading.Timer(RECOVER_AGAIN_SECONDS, _recover_queued_once)
    later.daemon = True
    later.start()
    threading.Thread(target=_resend_stale_jobs, args=(threading.Event(),), name="stale-jobs", daemon=True).start()
