"""Issue 14: what a model endpoint may send, and where.

- Only key variables the deployment allows (MODEL_KEY_VARIABLES, or the TASKWRIGHT_MODEL_KEY_
  prefix; never the deployment's own secrets) are refused on save (page and API) and again
  at call time, with words that never tell whether a variable exists.
- Base URLs reach only public addresses unless MODEL_ALLOW_PRIVATE_NETWORKS: checked on save
  and again where the socket is opened, on the address that was checked.
- An answer that is not a model API's is shown as its status and nothing of its body.
"""

import socket

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from authoring.models import DraftJob, DraftJobStatus
from authoring.services import drafting
from llm.client import chat
from llm.errors import ModelError
from llm.models import ModelCall, ModelEndpoint
from tests import factories
from tests.fake_llm import FakeLLMServer, Reply

MESSAGES = [{"role": "user", "content": "Say hi."}]
PUBLIC = "http://93.184.216.34/v1"  # a literal public address: no DNS needed to judge it


@pytest.fixture
def staff(db):
    user = factories.user("site-admin")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


@pytest.fixture
def api(staff) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.fixture
def page(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def private_networks_off(settings):
    settings.MODEL_ALLOW_PRIVATE_NETWORKS = False


def endpoints_state() -> list:
    return list(ModelEndpoint.objects.order_by("pk").values_list("pk", "name", "base_url", "api_key_env", "enabled"))


def form_data(**fields) -> dict:
    return {"name": "New", "kind": "openai_compatible", "base_url": PUBLIC, "model": "m", "api_key_env": "", "max_concurrency": "4",
            "connect_timeout": "10", "read_timeout": "120", "max_retries": "2", "price_input_per_mtok": "0",
            "price_output_per_mtok": "0", "enabled": "on", **fields}


# --- Key variables: on save ------------------------------------------------------------------

SET_AND_UNSET = ["PATH", "HOME", "SECRET_KEY", "DATABASE_URL", "OPENAI_API_KEY", "NOT_SET_ANYWHERE_4F2", "ALSO_UNSET_VARIABLE"]


def test_a_key_variable_outside_the_allowed_set_is_refused_through_the_api_without_saying_whether_it_exists(api, monkeypatch, endpoint):
    monkeypatch.setenv("SECRET_KEY", "x" * 60)
    monkeypatch.setenv("DATABASE_URL", "postgres://u:hunter2@db/tw")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-looking-key-0123456789")
    monkeypatch.delenv("NOT_SET_ANYWHERE_4F2", raising=False)
    monkeypatch.delenv("ALSO_UNSET_VARIABLE", raising=False)
    before = endpoints_state()
    answers = {}
    for name in SET_AND_UNSET:
        created = api.post("/api/model-endpoints/", {"name": "Sneaky", "kind": "openai_compatible", "base_url": PUBLIC, "model": "m",
                                                     "api_key_env": name}, format="json")
        changed = api.patch(f"/api/model-endpoints/{endpoint.pk}/", {"api_key_env": name}, format="json")
        for response in (created, changed):
            assert response.status_code == 400, response.json()
            assert set(response.json()) == {"api_key_env"}  # names the field
        assert created.json() == changed.json()
        answers[name] = created.json()["api_key_env"][0]
    # One answer for every refused name, set or not: nothing to learn about the environment.
    assert len(set(answers.values())) == 1
    message = answers["PATH"]
    assert "TASKWRIGHT_MODEL_KEY_" in message and "MODEL_KEY_VARIABLES" in message and "(now: FAKE_LLM_KEY)" in message
    for secret in ("hunter2", "x" * 60, "sk-real-looking", "/usr/"):
        assert secret not in message
    assert endpoints_state() == before


def test_a_key_variable_outside_the_allowed_set_is_refused_on_the_page_without_saying_whether_it_exists(page, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-looking-key-0123456789")
    monkeypatch.delenv("NOT_SET_ANYWHERE_4F2", raising=False)
    errors = []
    for name in ("OPENAI_API_KEY", "NOT_SET_ANYWHERE_4F2", "PATH"):
        response = page.post(reverse("model-endpoints"), form_data(api_key_env=name))
        assert response.status_code == 422
        text = response.content.decode()
        assert "Not saved." in text and "API key variable (name only): This variable may not hold a model key" in text
        errors.append(text.split("Not saved.", 1)[1].split("</div>", 1)[0])
    assert len(set(errors)) == 1 and "sk-real-looking" not in errors[0]
    assert not ModelEndpoint.objects.exists()


def test_listed_and_prefixed_variables_are_allowed_and_the_deployments_secrets_never(api, settings):
    settings.MODEL_KEY_VARIABLES = ["OPENAI_API_KEY", "SECRET_KEY", "DATABASE_URL", "DB_PASSWORD", "PATH"]
    for i, name in enumerate(["OPENAI_API_KEY", "TASKWRIGHT_MODEL_KEY_ANTHROPIC"]):
        created = api.post(
            "/api/model-endpoints/", {"name": f"ok {i}", "kind": "anthropic", "model": "m", "api_key_env": name}, format="json"
        )
        assert created.status_code == 201, created.json()
        assert created.json()["key_allowed"] is True
    # listed, or prefixed, and still refused
    for name in ["SECRET_KEY", "DATABASE_URL", "DB_PASSWORD", "PATH", "TASKWRIGHT_MODEL_KEY_SECRET_KEY"]:
        refused = api.post("/api/model-endpoints/", {"name": "no", "kind": "anthropic", "model": "m", "api_key_env": name}, format="json")
        assert refused.status_code == 400 and "api_key_env" in refused.json(), name
        assert "(now: OPENAI_API_KEY)" in refused.json()["api_key_env"][0]  # the listed secrets are not offered as allowed
    assert set(ModelEndpoint.objects.values_list("api_key_env", flat=True)) == {"OPENAI_API_KEY", "TASKWRIGHT_MODEL_KEY_ANTHROPIC"}


def test_a_listed_secret_is_flagged_by_the_system_checks(settings):
    from llm.apps import check_model_key_variables

    settings.MODEL_KEY_VARIABLES = ["OPENAI_API_KEY", "SECRET_KEY"]
    assert [w.id for w in check_model_key_variables(None)] == ["llm.W001"]
    assert "SECRET_KEY" in check_model_key_variables(None)[0].msg


def test_an_endpoint_with_a_refused_variable_can_still_be_disabled(api, db):
    saved = ModelEndpoint.objects.create(name="old", kind="openai_compatible", base_url=PUBLIC, model="m", api_key_env="PATH")
    assert api.patch(f"/api/model-endpoints/{saved.pk}/", {"model": "other"}, format="json").status_code == 400
    disabled = api.patch(f"/api/model-endpoints/{saved.pk}/", {"enabled": False}, format="json")
    assert disabled.status_code == 200 and disabled.json()["key_allowed"] is False
    saved.refresh_from_db()
    assert (saved.enabled, saved.api_key_env) == (False, "PATH")


# --- Key variables: at call time ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["PATH", "HOME", "SECRET_KEY", "OPENAI_API_KEY"])
def test_a_saved_endpoint_with_a_refused_variable_sends_nothing(db, fake_llm, monkeypatch, name):
    """Saved before the rule existed (straight into the database, as then): the call fails
    with a clear error and the variable never reaches the server."""
    monkeypatch.setenv(name, "value-that-must-stay-home")
    saved = ModelEndpoint.objects.create(
        name="old", kind="openai_compatible", base_url=fake_llm.url, model="m", api_key_env=name, max_retries=0
    )
    with pytest.raises(ModelError) as caught:
        chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "config"
    assert (
        f"reads its API key from {name}, which this deployment does not allow as a model key, so nothing was sent" in caught.value.message
    )
    assert fake_llm.requests == [] and fake_llm.connections == 0  # no Authorization header, no byte at all
    call = ModelCall.objects.get()
    assert call.outcome == "error" and "value-that-must-stay-home" not in call.error


def test_the_call_time_refusal_is_the_same_for_a_set_and_an_unset_variable(db, fake_llm, monkeypatch):
    monkeypatch.setenv("SET_VARIABLE_9A", "a value")
    monkeypatch.delenv("UNSET_VARIABLE_9A", raising=False)
    messages = []
    for name in ("SET_VARIABLE_9A", "UNSET_VARIABLE_9A"):
        saved = ModelEndpoint.objects.create(name="e", kind="openai_compatible", base_url=fake_llm.url, model="m", api_key_env=name)
        with pytest.raises(ModelError) as caught:
            chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
        messages.append(caught.value.message.replace(name, "<name>"))
        saved.delete()
    assert messages[0] == messages[1] and "not set" not in messages[0]
    assert fake_llm.requests == []


def test_a_variable_the_deployment_stops_listing_is_no_longer_sent(endpoint, fake_llm, settings):
    fake_llm.script(Reply(content="while listed"))
    assert chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting").text == "while listed"
    assert fake_llm.requests[0].headers["authorization"] == "Bearer sk-test-secret-key"
    settings.MODEL_KEY_VARIABLES = []
    with pytest.raises(ModelError, match="does not allow as a model key"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert len(fake_llm.requests) == 1


def test_staff_see_whether_a_refused_variable_is_allowed_but_not_whether_it_is_set(api, db, monkeypatch, client, staff):
    monkeypatch.setenv("HOME", "/root")
    saved = ModelEndpoint.objects.create(name="old", kind="openai_compatible", base_url=PUBLIC, model="m", api_key_env="HOME")
    shown = api.get(f"/api/model-endpoints/{saved.pk}/").json()
    assert (shown["key_allowed"], shown["key_set"]) == (False, False)
    client.force_login(staff)
    assert "HOME: <span class=\"badge failed\">not allowed on this server</span>" in client.get(reverse("model-endpoints")).content.decode()


# --- Base URLs: on save -----------------------------------------------------------------------

PRIVATE_URLS = [
    "http://127.0.0.1:11434/v1", "http://[::1]:8000/v1", "http://10.0.0.1/v1", "http://192.168.1.20:8000/v1",
    "http://169.254.169.254/latest/meta-data", "http://0x7f000001:5432/v1", "http://2130706433/v1", "http://0177.0.0.1/v1",
    "http://[::ffff:127.0.0.1]:6379/v1", "http://100.100.100.200/v1", "http://0.0.0.0:8000/v1", "http://localhost:11434/v1",
    "http://224.0.0.1/v1", "https://no-such-host.invalid/v1",  # one that does not resolve: the same refusal
]


def test_base_urls_on_private_networks_are_refused_through_the_api_when_not_allowed(api, private_networks_off):
    before = endpoints_state()
    details = set()
    for url in PRIVATE_URLS:
        response = api.post(
            "/api/model-endpoints/", {"name": "Internal", "kind": "openai_compatible", "base_url": url, "model": "m"}, format="json"
        )
        assert response.status_code == 400 and set(response.json()) == {"base_url"}, (url, response.json())
        details.add(response.json()["base_url"][0])
    assert len(details) == 1 and "MODEL_ALLOW_PRIVATE_NETWORKS=1" in details.pop()
    assert endpoints_state() == before
    assert api.post("/api/model-endpoints/", {"name": "Public", "kind": "openai_compatible", "base_url": PUBLIC, "model": "m"},
                    format="json").status_code == 201


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434/v1", "http://[::1]:8000/v1", "http://10.0.0.1/v1", "http://169.254.169.254/v1",
                                 "http://localhost:11434/v1"])
def test_base_urls_on_private_networks_are_refused_on_the_page_when_not_allowed(page, private_networks_off, url):
    response = page.post(reverse("model-endpoints"), form_data(base_url=url))
    assert response.status_code == 422
    assert "Base url: The base URL&#x27;s host must resolve, from this server, to public addresses only" in response.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_a_numeric_host_the_page_cannot_read_as_a_url_is_refused_too(page, private_networks_off):
    response = page.post(reverse("model-endpoints"), form_data(base_url="http://0x7f000001/v1"))
    assert response.status_code == 422 and not ModelEndpoint.objects.exists()


def test_private_base_urls_are_saved_and_reached_when_the_deployment_allows_them(api, fake_llm):
    port = fake_llm.url.rsplit(":", 1)[1].split("/")[0]
    for i, url in enumerate([fake_llm.url, f"http://localhost:{port}/v1", f"http://0x7f000001:{port}/v1"]):
        created = api.post(
            "/api/model-endpoints/", {"name": f"local {i}", "kind": "openai_compatible", "base_url": url, "model": "m"}, format="json"
        )
        assert created.status_code == 201, created.json()
        fake_llm.script(Reply(content=f"reached {i}"))
        assert (
            chat(endpoint=ModelEndpoint.objects.get(pk=created.json()["id"]), messages=MESSAGES, purpose="drafting").text == f"reached {i}"
        )
    assert [r.headers["host"] for r in fake_llm.requests] == [f"127.0.0.1:{port}", f"localhost:{port}", f"0x7f000001:{port}"]


# --- Base URLs: at every connection ----------------------------------------------------------

def test_a_call_to_a_private_address_is_refused_before_any_byte_once_the_deployment_stops_allowing_it(api, fake_llm, settings):
    created = api.post(
        "/api/model-endpoints/", {"name": "local", "kind": "openai_compatible", "base_url": fake_llm.url, "model": "m"}, format="json"
    )
    assert created.status_code == 201
    saved = ModelEndpoint.objects.get(pk=created.json()["id"])
    settings.MODEL_ALLOW_PRIVATE_NETWORKS = False
    with pytest.raises(ModelError) as caught:
        chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "config" and caught.value.attempts == 1  # not retried: the answer would be the same
    assert "does not resolve to a public address" in caught.value.message and "Nothing was sent" in caught.value.message
    assert fake_llm.connections == 0 and fake_llm.requests == []
    assert ModelCall.objects.get().outcome == "error"


def test_a_numeric_form_of_a_loopback_address_is_refused_at_connection_time(db, fake_llm, settings):
    port = fake_llm.url.rsplit(":", 1)[1].split("/")[0]
    settings.MODEL_ALLOW_PRIVATE_NETWORKS = False
    for i, host in enumerate(["0x7f000001", "2130706433", "127.1", "localhost", "[::ffff:127.0.0.1]"]):
        saved = ModelEndpoint.objects.create(name=f"n{i}", kind="openai_compatible", base_url=f"http://{host}:{port}/v1", model="m")
        with pytest.raises(ModelError, match="does not resolve to a public address"):
            chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
    assert fake_llm.connections == 0


def test_a_kept_connection_opened_while_allowed_is_not_reused_once_not(db, settings):
    server = FakeLLMServer(keep_alive=True).start()
    try:
        saved = ModelEndpoint.objects.create(name="kept", kind="openai_compatible", base_url=server.url, model="m", max_retries=0)
        server.script(Reply(content="first"))
        assert chat(endpoint=saved, messages=MESSAGES, purpose="drafting").text == "first"
        settings.MODEL_ALLOW_PRIVATE_NETWORKS = False
        with pytest.raises(ModelError, match="does not resolve to a public address"):
            chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
        assert server.connections == 1 and len(server.requests) == 1
    finally:
        server.stop()


def test_the_address_checked_is_the_address_connected_to(db, fake_llm, settings, monkeypatch):
    """DNS rebinding: a name that is public when checked and loopback a moment later. The
    connection pool (llm.http) resolves once per connection and connects to exactly what it checked: the
    second answer (the fake server on 127.0.0.1) is never asked for, let alone used."""
    import httpcore2

    port = int(fake_llm.url.rsplit(":", 1)[1].split("/")[0])
    real_resolve, real_connect = socket.getaddrinfo, httpcore2.SyncBackend.connect_tcp
    answers, asked, connected_to = [], [], []

    def rebinding_dns(host, *args, **kwargs):
        if host != "rebind.test":
            return real_resolve(host, *args, **kwargs)
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers.pop(0), port))]

    def recorded_connect(backend, host, port, **kwargs):  # the socket's own connect, under llm.http's check
        connected_to.append(host)
        if host != "127.0.0.1":
            raise httpcore2.ConnectError("ConnectionRefusedError")  # the public address, never actually dialled from a test
        return real_connect(backend, host, port, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    monkeypatch.setattr(httpcore2.SyncBackend, "connect_tcp", recorded_connect)
    settings.MODEL_ALLOW_PRIVATE_NETWORKS = False
    saved = ModelEndpoint.objects.create(
        name="rebind", kind="openai_compatible", base_url=f"http://rebind.test:{port}/v1", model="m", max_retries=0
    )

    answers[:] = ["93.184.216.34", "127.0.0.1"]  # public for the check, loopback for a second look
    with pytest.raises(ModelError, match="Could not reach the endpoint"):
        chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
    assert asked == ["rebind.test"] and connected_to == ["93.184.216.34"] and fake_llm.connections == 0

    answers[:] = ["127.0.0.1"]  # loopback at once: refused before any connection
    with pytest.raises(ModelError, match="does not resolve to a public address"):
        chat(endpoint=saved, messages=MESSAGES, purpose="drafting")
    assert connected_to == ["93.184.216.34"] and fake_llm.connections == 0

    settings.MODEL_ALLOW_PRIVATE_NETWORKS = True  # allowed: the one answer is still what is connected to, by its name
    asked.clear()
    answers[:] = ["127.0.0.1", "93.184.216.34"]
    fake_llm.script(Reply(content="from the checked address"))
    assert chat(endpoint=saved, messages=MESSAGES, purpose="drafting").text == "from the checked address"
    assert asked == ["rebind.test"] and fake_llm.requests[0].headers["host"] == f"rebind.test:{port}"


# --- What authors see of an answer that is not a model's ---------------------------------------

INTERNAL_PAGE = (b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
                 b"<pre>upstream redis://:s3cr3t-pass@10.0.0.7:6379 refused; DATABASE_URL=postgres://app:hunter2@db</pre></body></html>")


def test_a_non_model_answer_shows_only_its_status(endpoint, fake_llm):
    endpoint.max_retries = 0
    endpoint.save()
    fake_llm.script(Reply(status=502, raw=INTERNAL_PAGE, headers={"content-type": "text/html"}))
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    message = caught.value.message
    assert "HTTP 502, not a model API's answer" in message
    logged = ModelCall.objects.get().error
    for text in (message, logged):
        for secret in ("s3cr3t", "hunter2", "10.0.0.7", "Bad Gateway", "<"):
            assert secret not in text, (secret, text)


@pytest.mark.parametrize("raw", [
    b'{"cluster_name": "internal-es", "version": {"number": "8.1"}, "tagline": "You Know, for Search"}',  # JSON, not an error
    b'{"error": {"code": 17, "detail": "stack trace at /srv/app/secret.py"}}',  # an error with no message to show
    b"[1, 2, 3]",
    b"-ERR unknown command 'POST', with args beginning with: '/v1/chat/completions'",  # Redis on the port
])
def test_json_or_text_that_is_not_a_model_apis_error_is_not_repeated(endpoint, fake_llm, raw):
    endpoint.max_retries = 0
    endpoint.save()
    fake_llm.script(Reply(status=500, raw=raw))  # served as application/json
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert "(HTTP 500, not a model API's answer)" in caught.value.message
    for piece in ("internal-es", "secret.py", "1, 2", "ERR", "unknown command"):
        assert piece not in caught.value.message


def test_a_model_apis_error_gives_a_short_clean_reason(endpoint, fake_llm):
    endpoint.max_retries = 0
    endpoint.save()
    long_reason = "The model is overloaded\x1b[31m\u202e right now;\n\n please   try again. " + "details " * 40
    fake_llm.script(Reply(status=503, content=long_reason), Reply(status=400, raw=b'{"error": "model \'llama9\' not found"}'))
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    reason = caught.value.message.split("HTTP 503: ", 1)[1].split(").", 1)[0]
    assert reason.startswith("The model is overloaded [31m right now; please try again. details") and reason.endswith("…")
    assert len(reason) <= 120 and "\x1b" not in reason and "\u202e" not in reason and "\n" not in reason
    with pytest.raises(ModelError, match=r"rejected the request \(HTTP 400: model 'llama9' not found\)"):  # Ollama's shape
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")


def test_an_author_drafting_through_an_endpoint_behind_a_broken_proxy_sees_only_the_status(
    team, endpoint, fake_llm, eager, django_capture_on_commit_callbacks,
):
    endpoint.max_retries = 0
    endpoint.save()
    fake_llm.responder = lambda request: Reply(status=502, raw=INTERNAL_PAGE, headers={"content-type": "text/html"})
    world = factories.world(team.project, team.author, documents=1)
    with django_capture_on_commit_callbacks(execute=True):
        drafting.draft_run_start(world=world, user=team.author, endpoint=endpoint)
    job = DraftJob.objects.get(run__world=world)
    assert job.status == DraftJobStatus.FAILED and "HTTP 502, not a model API's answer" in job.error
    assert "hunter2" not in job.error and "<" not in job.error
