"""What a worker process does as it starts: its threads hand the interpreter lock over less
often than Python's default (settings.WORKER_SWITCH_INTERVAL: with dozens of rollout threads,
forced hand-overs every 5 ms cost the worker CPU), and it imports its task code."""

import sys

import pytest
from celery.signals import worker_init

from config import celery


def started() -> None:
    """What worker_init runs of ours (sending the signal itself would run Celery's Django
    fixup too, which wants a real worker)."""
    connected = [receiver() for _, receiver in worker_init.receivers]
    for handler in (celery._switch_interval, celery._import_task_code):
        assert handler in connected
        handler(sender=None)


@pytest.fixture
def restore_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_a_starting_worker_sets_the_switch_interval(settings, restore_interval):
    settings.WORKER_SWITCH_INTERVAL = 0.02
    sys.setswitchinterval(0.005)
    started()
    assert sys.getswitchinterval() == pytest.approx(0.02)


def test_zero_keeps_pythons_default(settings, restore_interval):
    settings.WORKER_SWITCH_INTERVAL = 0
    sys.setswitchinterval(0.005)
    started()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_starting_worker_imports_its_task_code(monkeypatch, restore_interval):
    """Before its first task, so its first dozens of rollouts do not wait on the imports together."""
    import importlib

    imported = []
    monkeypatch.setattr(importlib, "import_module", imported.append)
    started()
    assert imported == list(celery.WORKER_IMPORTS)
    for name in celery.WORKER_IMPORTS:  # each is a module that exists
        assert importlib.util.find_spec(name) is not None
