"""Issue 17, the Models page and the model pickers: "Test connection" (one tiny call, queued on
the `default` queue, its result polled), pickers that start on the endpoint last used
successfully in the project and never on a failing one, timeouts with their units, what an
author is told about who adds models, and help text linked to its field."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from llm import services
from llm.models import CallOutcome, CallPurpose, EndpointCheck, EndpointCheckStatus, ModelCall, ModelEndpoint
from llm.selectors import endpoint_default
from tests import factories
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def staff(db):
    user = factories.user("site-admin")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


@pytest.fixture
def admin_client(client, staff):
    client.force_login(staff)
    return client


def start_check(admin_client, endpoint, django_capture_on_commit_callbacks, *, run: bool):
    """POST "Test connection" as htmx; with `run`, the queued job runs here (eagerly) once the request commits."""
    with django_capture_on_commit_callbacks(execute=run):
        response = admin_client.post(reverse("model-endpoint-test", args=[endpoint.pk]), **HX)
    return response


def poll(admin_client, check) -> str:
    response = admin_client.get(reverse("model-endpoint-check", args=[check.pk]), **HX)
    assert response.status_code == 200
    return response.content.decode()


# --- Test connection ---------------------------------------------------------------------------

def test_test_connection_queues_one_call_and_the_polled_result_says_ok_with_the_latency(admin_client, endpoint, fake_llm,
                                                                                       django_capture_on_commit_callbacks):
    response = start_check(admin_client, endpoint, django_capture_on_commit_callbacks, run=False)
    assert response.status_code == 200
    html = response.content.decode()
    check = EndpointCheck.objects.get()
    # Nothing was called inside the request: the job waits on the queue, and the fragment polls it.
    assert fake_llm.requests == [] and check.status == EndpointCheckStatus.QUEUED
    assert "Waiting for a worker" in html
    assert f'hx-get="{reverse("model-endpoint-check", args=[check.pk])}"' in html and 'hx-trigger="every 1s"' in html
    assert re.search(r"<button[^>]*disabled[^>]*>Test connection</button>", html)

    fake_llm.script(Reply(content="OK", delay=0.05))
    services.endpoint_check_run(check_id=check.pk)
    services.endpoint_check_run(check_id=check.pk)  # a second delivery of the message is a no-op
    assert len(fake_llm.requests) == 1
    body = fake_llm.requests[0].body
    assert body["max_tokens"] == services.CHECK_MAX_TOKENS or body.get("max_completion_tokens") == services.CHECK_MAX_TOKENS
    check.refresh_from_db()
    assert check.status == EndpointCheckStatus.OK and check.latency_ms >= 50 and check.finished_at
    call = ModelCall.objects.get()
    assert (call.purpose, call.outcome, call.endpoint_id) == (CallPurpose.CHECK, CallOutcome.OK, endpoint.pk)

    html = poll(admin_client, check)
    assert f"✓ OK: answered in {check.latency_ms} ms" in html
    assert "hx-trigger" not in html  # done: the fragment stops polling
    page = admin_client.get(reverse("model-endpoints")).content.decode()
    assert f"✓ OK: answered in {check.latency_ms} ms" in page


def test_a_failing_connection_shows_the_status_and_the_providers_short_reason_after_one_attempt(
        admin_client, endpoint, fake_llm, eager, django_capture_on_commit_callbacks):
    fake_llm.responder = lambda request: Reply(status=401, raw=b'{"error": {"message": "Incorrect API key provided"}}',
                                               headers={"content-type": "application/json"})
    start_check(admin_client, endpoint, django_capture_on_commit_callbacks, run=True)
    check = EndpointCheck.objects.get()
    assert check.status == EndpointCheckStatus.FAILED
    assert "HTTP 401: Incorrect API key provided" in check.reason
    assert len(fake_llm.requests) == 1
    html = poll(admin_client, check)
    assert "✗ Failed:" in html and "HTTP 401: Incorrect API key provided" in html
    assert "sk-test-secret-key" not in html

    # A server error is not retried by a test: one attempt, one answer.
    fake_llm.reset()
    fake_llm.responder = lambda request: Reply(status=503, raw=b'{"error": {"message": "Model is loading"}}',
                                               headers={"content-type": "application/json"})
    start_check(admin_client, endpoint, django_capture_on_commit_callbacks, run=True)
    latest = EndpointCheck.objects.order_by("-pk").first()
    assert latest.status == EndpointCheckStatus.FAILED and "HTTP 503: Model is loading" in latest.reason
    assert len(fake_llm.requests) == 1
    endpoint.refresh_from_db()
    assert endpoint.max_retries == 3  # (the single attempt was this call's, not saved)


def test_a_check_no_worker_picks_up_stops_polling_and_says_what_to_look_at(admin_client, endpoint, django_capture_on_commit_callbacks):
    start_check(admin_client, endpoint, django_capture_on_commit_callbacks, run=False)
    check = EndpointCheck.objects.get()
    EndpointCheck.objects.filter(pk=check.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    html = poll(admin_client, check)
    assert "no worker finished it" in html and "hx-trigger" not in html


def test_only_a_site_admin_tests_a_connection(client, team, endpoint, fake_llm, django_capture_on_commit_callbacks):
    client.force_login(team.admin)  # a project admin is not a site admin
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("model-endpoint-test", args=[endpoint.pk]), **HX)
    assert response.status_code == 403
    assert "Only a site admin" in response.content.decode()
    assert not EndpointCheck.objects.exists() and fake_llm.requests == []
    check = EndpointCheck.objects.create(endpoint=endpoint)
    assert client.get(reverse("model-endpoint-check", args=[check.pk]), **HX).status_code == 403
    page = client.get(reverse("model-endpoints")).content.decode()
    assert "Test connection" not in page


def test_a_disabled_endpoint_is_not_tested(admin_client, endpoint, fake_llm, django_capture_on_commit_callbacks):
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    response = start_check(admin_client, endpoint, django_capture_on_commit_callbacks, run=True)
    assert response.status_code == 422
    assert "disabled: enable it before testing" in response.content.decode()
    assert not EndpointCheck.objects.exists() and fake_llm.requests == []


# --- The pickers' default ----------------------------------------------------------------------

def endpoint_named(name: str, kind: str = "openai_compatible") -> ModelEndpoint:
    return ModelEndpoint.objects.create(name=name, kind=kind, base_url="https://api.example.com/v1", model=f"{name}-model")


def call(endpoint, project, outcome, minutes_ago: int) -> None:
    row = ModelCall.objects.create(endpoint=endpoint, endpoint_name=endpoint.name, project_id=project.pk, purpose=CallPurpose.DRAFTING,
                                   outcome=outcome)
    ModelCall.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))


def selected_option(html: str, select_id: str) -> str | None:
    select = re.search(rf'<select[^>]* id="{select_id}"[^>]*>(.*?)</select>', html, re.S).group(1)
    chosen = re.search(r'<option value="(\d*)"[^>]*selected', select)
    return chosen.group(1) if chosen else None


def test_pickers_start_on_the_endpoint_last_used_successfully_in_the_project_never_a_failing_one(client, team, world, other_team):
    alpha, beta, gamma = endpoint_named("alpha"), endpoint_named("beta"), endpoint_named("gamma")
    client.force_login(team.author)
    url = reverse("world-editor", args=[world.pk])
    assert endpoint_default(project_id=team.project.pk) == alpha  # nothing used yet: the first in the list

    call(beta, team.project, CallOutcome.OK, minutes_ago=30)
    call(gamma, team.project, CallOutcome.OK, minutes_ago=20)
    call(alpha, other_team.project, CallOutcome.OK, minutes_ago=1)  # another project's use does not count here
    html = client.get(url).content.decode()
    assert selected_option(html, "draft-endpoint") == str(gamma.pk)
    assert selected_option(html, "skeleton-endpoint") == str(gamma.pk)

    call(gamma, team.project, CallOutcome.ERROR, minutes_ago=5)  # gamma now fails: back to beta, and gamma says so
    html = client.get(url).content.decode()
    assert selected_option(html, "draft-endpoint") == str(beta.pk)
    assert "gamma · gamma-model — its last call failed" in html

    # A failed connection test after beta's last success makes it failing too.
    EndpointCheck.objects.create(endpoint=beta, status=EndpointCheckStatus.FAILED, reason="HTTP 401", finished_at=timezone.now())
    assert endpoint_default(project_id=team.project.pk) == alpha
    # Every endpoint failing: no default; the select asks the author to choose.
    call(alpha, team.project, CallOutcome.ERROR, minutes_ago=1)
    assert endpoint_default(project_id=team.project.pk) is None
    html = client.get(url).content.decode()
    assert selected_option(html, "draft-endpoint") == ""
    assert "Choose a model: the last call to each one failed" in html
    # A success since (a passing connection test counts) makes it the default again.
    EndpointCheck.objects.create(endpoint=gamma, status=EndpointCheckStatus.OK, latency_ms=80, finished_at=timezone.now())
    assert endpoint_default(project_id=team.project.pk) == gamma


def test_the_trials_form_starts_on_the_endpoint_last_used_successfully(client, team, env_task):
    alpha, beta = endpoint_named("alpha"), endpoint_named("beta")
    call(beta, team.project, CallOutcome.OK, minutes_ago=3)
    client.force_login(team.author)
    html = client.get(reverse("task-trials", args=[env_task.pk]), **HX).content.decode()
    assert selected_option(html, "trials-endpoint") == str(beta.pk)
    call(beta, team.project, CallOutcome.ERROR, minutes_ago=1)
    html = client.get(reverse("task-trials", args=[env_task.pk]), **HX).content.decode()
    assert selected_option(html, "trials-endpoint") in (None, str(alpha.pk))  # (none marked: the browser takes the first, alpha)
    assert alpha.pk != beta.pk


# --- Units, who adds models, help text ------------------------------------------------------------

def test_timeouts_are_shown_in_seconds_in_the_form_and_the_table(admin_client, endpoint):
    html = admin_client.get(reverse("model-endpoints")).content.decode()
    assert ">Connect timeout (seconds)</label>" in html and ">Read timeout (seconds)</label>" in html
    assert "connect 2 s · read 2 s" in html
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(read_timeout=90.5)
    assert "connect 2 s · read 90.5 s" in admin_client.get(reverse("model-endpoints")).content.decode()
    response = admin_client.post(reverse("model-endpoints"), {
        "name": "slow", "kind": "openai_compatible", "base_url": "https://api.example.com/v1", "model": "m", "max_concurrency": 2,
        "connect_timeout": 10, "read_timeout": 5000, "max_retries": 1, "price_input_per_mtok": 0, "price_output_per_mtok": 0,
        "enabled": "on",
    })
    assert "Read timeout must be between 0.1 and 3600 seconds." in response.content.decode()
    assert not ModelEndpoint.objects.filter(name="slow").exists()


def test_an_authors_models_page_says_who_can_add_one(client, team, endpoint, staff):
    client.force_login(team.author)
    html = client.get(reverse("model-endpoints")).content.decode()
    assert "Only a site admin can add or change model endpoints." in html
    assert "Ask a site admin (site-admin) to add the model you need" in html
    assert "Add an endpoint" not in html and "Test connection" not in html
    staff.is_active = False
    staff.save(update_fields=["is_active"])
    html = client.get(reverse("model-endpoints")).content.decode()
    assert "Ask whoever runs Taskwright for your organisation (a site admin)" in html


def test_the_site_admin_is_not_told_to_ask_a_site_admin(admin_client, endpoint):
    assert "Only a site admin can add" not in admin_client.get(reverse("model-endpoints")).content.decode()


def test_every_aria_describedby_on_the_endpoint_form_points_at_an_element_that_exists(admin_client, endpoint):
    html = admin_client.get(reverse("model-endpoints")).content.decode()
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    described = [i for value in re.findall(r'aria-describedby="([^"]+)"', html) for i in value.split()]
    assert len(described) >= 4  # base URL, model, key variable, concurrency, stream: each has help text
    assert [i for i in described if i not in ids] == []
    assert 'id="id_api_key_env_helptext"' in html
