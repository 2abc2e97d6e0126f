import importlib
import os
import sys

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("taskwright")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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


@worker_init.connect
def _import_task_code(**kwargs) -> None:
    for name in WORKER_IMPORTS:
        importlib.import_module(name)
