"""The per-endpoint cap holds across processes: two separate worker processes, each
with many threads calling the same endpoint, never have more calls in flight together
than the cap."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llm.models import ModelCall
from tests.fake_llm import Reply
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
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "DEBUG": "1"}
    root = Path(__file__).resolve().parents[2]
    processes = [subprocess.Popen([sys.executable, "-c", CALLER, str(endpoint.pk)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), outputs
    assert len(fake_llm.requests) == 12
    assert fake_llm.max_in_flight == 3  # saturated, never above the cap
    assert ModelCall.objects.filter(outcome="ok").count() == 12
