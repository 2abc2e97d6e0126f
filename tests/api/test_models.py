"""Model endpoints and the model-call log through the API: everyone sees which models
exist, only site admins configure them, the key never appears anywhere, and the call log
is scoped (staff: all; a project admin: their projects; anyone else: 403)."""

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounts.models import Role
from accounts.services import membership_set
from llm.client import chat
from llm.errors import ModelError
from llm.models import ModelCall, ModelEndpoint
from tests import factories
from tests.fake_llm import Reply

KEY = "sk-test-secret-key"  # what tests/conftest.py's `endpoint` puts in FAKE_LLM_KEY
PUBLIC_FIELDS = {"id", "name", "kind", "model", "is_scripted", "enabled"}


@pytest.fixture
def staff(db):
    user = factories.user("site-admin")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


def endpoints_state() -> list:
    return list(
        ModelEndpoint.objects.order_by("pk").values_list(
            "pk", "name", "kind", "base_url", "model", "api_key_env", "enabled", "max_concurrency"
        )
    )


# --- Endpoints -------------------------------------------------------------------------

def test_every_user_lists_endpoints_but_only_staff_see_their_configuration(team, staff, endpoint, api_for, monkeypatch):
    ModelEndpoint.objects.create(name="Sample", kind="scripted", enabled=False)
    for user in (team.author, team.reviewer, team.admin):
        listed = api_for(user).get("/api/model-endpoints/")
        assert listed.status_code == 200
        rows = listed.json()["results"]
        assert [(r["name"], r["is_scripted"], r["enabled"]) for r in rows] == [("Sample", True, False), ("fake", False, True)]
        assert all(set(r) == PUBLIC_FIELDS for r in rows)  # no base URL, key variable or key state
        assert set(api_for(user).get(f"/api/model-endpoints/{endpoint.pk}/").json()) == PUBLIC_FIELDS

    admin_view = api_for(staff).get(f"/api/model-endpoints/{endpoint.pk}/").json()
    assert (admin_view["api_key_env"], admin_view["key_set"], admin_view["base_url"]) == ("FAKE_LLM_KEY", True, endpoint.base_url)
    assert (admin_view["price_input_per_mtok"], admin_view["max_concurrency"]) == ("1.0000", 4)
    monkeypatch.delenv("FAKE_LLM_KEY")
    assert api_for(staff).get(f"/api/model-endpoints/{endpoint.pk}/").json()["key_set"] is False

    assert api_for(team.author).get("/api/model-endpoints/999999/").status_code == 404
    assert api_for(team.author).get("/api/model-endpoints/?kind=scripted").status_code == 400  # allow-listed parameters
    assert APIClient().get("/api/model-endpoints/").status_code in (401, 403)


def test_staff_add_and_change_endpoints(staff, api_for, monkeypatch, settings):
    client = api_for(staff)
    created = client.post("/api/model-endpoints/", {
        "name": "Local Ollama", "kind": "openai_compatible", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3.1",
        "price_input_per_mtok": "0.5",
    }, format="json")
    assert created.status_code == 201, created.json()
    endpoint = ModelEndpoint.objects.get(name="Local Ollama")
    assert (endpoint.kind, endpoint.model, endpoint.api_key_env, endpoint.max_concurrency, endpoint.price_input_per_mtok) == (
        "openai_compatible", "llama3.1", "", 4, Decimal("0.5")
    )
    assert created.json()["key_set"] is False and created.json()["id"] == endpoint.pk

    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-looking-key-0123456789")
    refused = client.patch(f"/api/model-endpoints/{endpoint.pk}/", {"api_key_env": "OPENAI_API_KEY"}, format="json")
    assert refused.status_code == 400 and "MODEL_KEY_VARIABLES" in refused.json()["api_key_env"][0]  # not allowed until listed
    settings.MODEL_KEY_VARIABLES = [*settings.MODEL_KEY_VARIABLES, "OPENAI_API_KEY"]
    patched = client.patch(f"/api/model-endpoints/{endpoint.pk}/", {"api_key_env": "OPENAI_API_KEY", "enabled": False}, format="json")
    assert patched.status_code == 200, patched.json()
    endpoint.refresh_from_db()
    assert (endpoint.api_key_env, endpoint.enabled, endpoint.model) == ("OPENAI_API_KEY", False, "llama3.1")  # the rest untouched
    assert patched.json()["key_set"] is True and "sk-real-looking-key" not in patched.content.decode()

    before = endpoints_state()
    for body, message in [
        ({"name": "No URL", "kind": "openai_compatible", "model": "m"}, "needs its base URL"),
        ({"name": "Local Ollama", "kind": "scripted"}, "already an endpoint named"),
        ({"name": "Ftp", "kind": "anthropic", "base_url": "ftp://example.test", "model": "m"}, "must start with http"),
        ({"name": "No model", "kind": "anthropic"}, "model name"),
    ]:
        response = client.post("/api/model-endpoints/", body, format="json")
        assert response.status_code == 400 and message in response.json()["detail"], (body, response.json())
    assert client.post("/api/model-endpoints/", {"name": "Odd", "kind": "telepathy"}, format="json").json()["kind"]
    assert (
        client.post("/api/model-endpoints/", {"name": "Zero", "kind": "scripted", "max_concurrency": 0}, format="json").status_code == 400
    )
    assert (
        client.patch(f"/api/model-endpoints/{endpoint.pk}/", {"kind": "openai_compatible", "base_url": ""}, format="json").status_code
        == 400
    )
    assert endpoints_state() == before


def test_only_staff_configure_endpoints(team, endpoint, api_for):
    before = endpoints_state()
    for user in (team.author, team.reviewer, team.admin):
        client = api_for(user)
        created = client.post("/api/model-endpoints/", {"name": "Mine", "kind": "scripted"}, format="json")
        assert created.status_code == 403 and created.json()["detail"] == "Only a site admin can configure model endpoints."
        changed = client.patch(f"/api/model-endpoints/{endpoint.pk}/", {"base_url": "https://attacker.test/v1"}, format="json")
        assert changed.status_code == 403
    assert endpoints_state() == before


@pytest.mark.parametrize("pasted", [KEY, "sk-ant-api03-AbCdEf0123456789", "Bearer sk-proj-0123456789abcdef"])
def test_a_key_pasted_where_its_variable_name_belongs_is_refused_and_never_echoed(staff, endpoint, api_for, pasted):
    client = api_for(staff)
    before = endpoints_state()
    created = client.post(
        "/api/model-endpoints/", {"name": "Pasted", "kind": "anthropic", "model": "claude", "api_key_env": pasted}, format="json"
    )
    assert created.status_code == 400 and "NAME of an environment variable" in created.json()["detail"]
    changed = client.patch(f"/api/model-endpoints/{endpoint.pk}/", {"api_key_env": pasted}, format="json")
    assert changed.status_code == 400
    for response in (created, changed):
        assert pasted not in response.content.decode()
    assert endpoints_state() == before


# --- Model calls -----------------------------------------------------------------------

@pytest.fixture
def calls(team, other_team, endpoint):
    def call(project_id, purpose):
        return ModelCall.objects.create(
            endpoint=endpoint, endpoint_name=endpoint.name, project_id=project_id, purpose=purpose, outcome="ok",
            input_tokens=10, output_tokens=5, cost=Decimal("0.000020"), latency_ms=12,
        )

    return {"ours": call(team.project.pk, "drafting"), "theirs": call(other_team.project.pk, "judge"), "none": call(None, "other")}


def test_the_call_log_is_scoped_to_what_each_user_administers(team, other_team, staff, calls, api_for):
    everything = api_for(staff).get("/api/model-calls/")
    assert everything.status_code == 200
    assert {c["id"] for c in everything.json()["results"]} == {c.pk for c in calls.values()}
    narrowed = api_for(staff).get(f"/api/model-calls/?project={other_team.project.pk}").json()["results"]
    assert [c["id"] for c in narrowed] == [calls["theirs"].pk]

    admin = api_for(team.admin)
    ours = admin.get("/api/model-calls/").json()
    assert [(c["id"], c["project"], c["purpose"], c["cost"]) for c in ours["results"]] == [
        (calls["ours"].pk, team.project.pk, "drafting", "0.000020")
    ]
    assert admin.get(f"/api/model-calls/?project={team.project.pk}").json()["count"] == 1
    assert admin.get(f"/api/model-calls/?project={other_team.project.pk}").json()["count"] == 0
    assert admin.get("/api/model-calls/?purpose=judge").status_code == 400
    assert admin.get("/api/model-calls/?project=abc").status_code == 400

    for user in (team.author, team.reviewer):
        refused = api_for(user).get("/api/model-calls/")
        assert refused.status_code == 403 and "admins" in refused.json()["detail"]
    # An admin of another project who is only an author here sees nothing of ours.
    membership_set(project=team.project, user=other_team.admin, role=Role.AUTHOR)
    theirs = api_for(other_team.admin).get("/api/model-calls/").json()["results"]
    assert [c["id"] for c in theirs] == [calls["theirs"].pk]


def test_the_key_never_appears_in_the_call_log_or_endpoint_answers(team, staff, endpoint, fake_llm, api_for):
    # A provider (or proxy) that echoes the Authorization header back in its error.
    fake_llm.responder = lambda request: Reply(status=401, content=f"Incorrect API key provided: {request.headers.get('authorization')}")
    with pytest.raises(ModelError, match="refused the API key"):
        chat(endpoint=endpoint, messages=[{"role": "user", "content": "hi"}], purpose="other", project_id=team.project.pk)
    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {KEY}"
    call = ModelCall.objects.get()
    assert call.outcome == "error" and "[redacted]" in call.error and KEY not in call.error
    answers = [
        api_for(staff).get("/api/model-calls/"), api_for(team.admin).get("/api/model-calls/"),
        api_for(staff).get("/api/model-endpoints/"), api_for(staff).get(f"/api/model-endpoints/{endpoint.pk}/"),
        api_for(team.author).get("/api/model-endpoints/"),
    ]
    assert "refused the API key" in answers[0].content.decode()
    for response in answers:
        assert response.status_code == 200 and KEY not in response.content.decode()
