"""A worker process asks its threads to hand the interpreter lock over less often than
Python's default (settings.WORKER_SWITCH_INTERVAL): with dozens of rollout threads, forced
hand-overs every 5 ms cost the worker CPU."""

import sys

import pytest
from celery.signals import worker_init


@pytest.fixture
def restore_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_a_starting_worker_sets_the_switch_interval(settings, restore_interval):
    settings.WORKER_SWITCH_INTERVAL = 0.02
    sys.setswitchinterval(0.005)
    worker_init.send(sender=None)
    assert sys.getswitchinterval() == pytest.approx(0.02)


def test_zero_keeps_pythons_default(settings, restore_interval):
    settings.WORKER_SWITCH_INTERVAL = 0
    sys.setswitchinterval(0.005)
    worker_init.send(sender=None)
    assert sys.getswitchinterval() == pytest.approx(0.005)
