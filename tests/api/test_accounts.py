"""Token, projects, and the rules every endpoint shares: auth, CSRF on session writes,
allow-listed query parameters, ids, JSON parsing, the schema and its docs page."""

import json
import re

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import Role
from accounts.services import membership_set
from authoring.models import World
from tests import factories

# --- Token -----------------------------------------------------------------------------

def test_token_obtain_returns_a_token_that_authenticates(team):
    client = APIClient()
    response = client.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=team.author).key == token
    assert response["Cache-Control"] == "no-store"

    # The same token comes back on the next sign-in.
    again = client.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json")
    assert again.json() == {"token": token}

    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    projects = client.get("/api/projects/")
    assert projects.status_code == 200
    assert [p["id"] for p in projects.json()["results"]] == [team.project.pk]


def test_token_obtain_accepts_a_form_post(team):
    response = APIClient().post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD})
    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=team.author).key


def test_token_obtain_with_wrong_credentials_is_a_clear_400(team):
    response = APIClient().post("/api/auth/token/", {"username": team.author.username, "password": "wrong"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "Unable to sign in with that username and password."}
    assert not Token.objects.filter(user=team.author).exists()

    missing = APIClient().post("/api/auth/token/", {"username": team.author.username}, format="json")
    assert missing.status_code == 400
    assert "password" in missing.json()


def test_token_obtain_is_rate_limited_per_address_and_username(team, settings):
    settings.LOGIN_RATE_LIMIT = (3, 900)
    client = APIClient()
    for _ in range(3):
        assert client.post("/api/auth/token/", {"username": team.author.username, "password": "nope"}, format="json").status_code == 400
    # Even the right password is refused now, so guessing gains nothing.
    blocked = client.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json")
    assert blocked.status_code == 429
    assert "Too many failed sign-in attempts" in blocked.json()["detail"]
    assert not Token.objects.filter(user=team.author).exists()
    # Another user is not locked out by someone guessing at this one.
    other = client.post("/api/auth/token/", {"username": team.reviewer.username, "password": factories.PASSWORD}, format="json")
    assert other.status_code == 200


def test_inactive_user_gets_no_token(team):
    team.author.is_active = False
    team.author.save(update_fields=["is_active"])
    response = APIClient().post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 400


def test_every_endpoint_needs_authentication(team, world):
    client = APIClient()
    for url in [
        "/api/projects/",
        f"/api/projects/{team.project.pk}/",
        "/api/worlds/",
        f"/api/worlds/{world.pk}/",
        "/api/tasks/",
        "/api/packs/",
        "/api/review-queue/",
    ]:
        assert client.get(url).status_code == 401, url
    assert client.post("/api/worlds/", {"project": team.project.pk, "title": "X"}, format="json").status_code == 401
    bad_token = APIClient()
    bad_token.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert bad_token.get("/api/projects/").status_code == 401


# --- Projects --------------------------------------------------------------------------

def test_projects_list_and_detail_carry_the_callers_role(team, other_team, api_for):
    second = factories.project("Banking")
    membership_set(project=second, user=team.reviewer, role=Role.ADMIN)

    response = api_for(team.reviewer).get("/api/projects/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    roles = {p["id"]: p["role"] for p in body["results"]}
    assert roles == {team.project.pk: "reviewer", second.pk: "admin"}
    assert other_team.project.pk not in roles

    detail = api_for(team.reviewer).get(f"/api/projects/{team.project.pk}/")
    assert detail.status_code == 200
    assert detail.json()["role"] == "reviewer"
    assert detail.json()["name"] == team.project.name


def test_a_project_you_are_not_in_is_a_404(team, other_team, api_for):
    response = api_for(team.author).get(f"/api/projects/{other_team.project.pk}/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such project."}


# --- Shared request rules --------------------------------------------------------------

def test_unknown_query_parameter_is_a_400(team, world, api_for):
    client = api_for(team.author)
    response = client.get("/api/worlds/?projet=1")
    assert response.status_code == 400
    assert "Unknown query parameter(s): projet" in response.json()["detail"]
    # A list's filter is not accepted on a detail endpoint, nor on a write.
    assert client.get(f"/api/worlds/{world.pk}/?project=1").status_code == 400
    assert (
        client.post(f"/api/worlds/?project={team.project.pk}", {"project": team.project.pk, "title": "T"}, format="json").status_code == 400
    )
    assert not World.objects.filter(title="T").exists()
    # The allow-listed ones work.
    ok = client.get(f"/api/worlds/?project={team.project.pk}&limit=1&offset=0&format=json")
    assert ok.status_code == 200
    assert ok.json()["count"] == 1


@pytest.mark.parametrize(
    "query",
    [
        "project=abc", "project=-1", "project=0", "project=99999999999999999999999", "project=1&project=2",
        "limit=abc", "limit=0", "offset=-3", "status=nonsense",
    ],
)
def test_bad_filter_values_are_a_400_with_a_message(team, api_for, query):
    response = api_for(team.author).get(f"/api/tasks/?{query}")
    assert response.status_code == 400
    assert response.json()["detail"]


@pytest.mark.parametrize("bad_id", ["abc", "1.5", "-1", "0", "99999999999999999999", "%C2%B2", "1e3"])
def test_non_integer_id_is_a_400_not_a_500(team, api_for, bad_id):
    client = api_for(team.author)
    for url in [f"/api/worlds/{bad_id}/", f"/api/tasks/{bad_id}/", f"/api/documents/{bad_id}/", f"/api/packs/{bad_id}/download/"]:
        response = client.get(url)
        assert response.status_code == 400, url
        assert "must be a positive whole number" in response.json()["detail"]
    patch = client.patch(f"/api/criteria/{bad_id}/", {"revision": 1}, format="json")
    assert patch.status_code == 400


def test_malformed_json_is_a_400(team, world, api_for):
    client = api_for(team.author)
    response = client.generic("PATCH", f"/api/worlds/{world.pk}/", '{"revision": 1, "title": ', content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]
    world.refresh_from_db()
    assert world.revision == 1

    not_an_object = client.post("/api/worlds/", "[1, 2]", content_type="application/json")
    assert not_an_object.status_code == 400

    deep = client.post("/api/worlds/", "[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert deep.status_code == 400


def test_text_postgresql_cannot_store_is_a_400(team, world, api_for):
    client = api_for(team.author)
    nul_in_json = client.post(
        "/api/worlds/", {"project": team.project.pk, "title": "ok", "facts": [{"key": "k", "value": "a\x00b"}]}, format="json"
    )
    assert nul_in_json.status_code == 400
    surrogate = client.post(
        "/api/worlds/", '{"project": ' + str(team.project.pk) + ', "title": "bad \\ud800 text"}', content_type="application/json"
    )
    assert surrogate.status_code == 400
    assert "Unicode" in surrogate.json()["detail"]
    metadata = client.post(
        f"/api/worlds/{world.pk}/documents/", {"path": "Mail/a", "kind": "email", "metadata": {"subject": "\x00"}}, format="json"
    )
    assert metadata.status_code == 400
    assert World.objects.filter(project=team.project).count() == 1


def test_a_body_over_the_upload_limit_is_refused(team, api_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_for(team.author).post("/api/worlds/", {"project": team.project.pk, "title": "x", "outline": "y" * 2000}, format="json")
    assert response.status_code == 413
    assert not World.objects.filter(title="x").exists()


def test_session_auth_write_enforces_csrf(team):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(team.author)

    # Reads need no token.
    assert client.get("/api/projects/").status_code == 200

    refused = client.post("/api/worlds/", {"project": team.project.pk, "title": "Via session"}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not World.objects.filter(title="Via session").exists()

    secret = "a" * 32
    client.cookies["csrftoken"] = secret
    accepted = client.post("/api/worlds/", {"project": team.project.pk, "title": "Via session"}, format="json", HTTP_X_CSRFTOKEN=secret)
    assert accepted.status_code == 201
    assert World.objects.get(title="Via session").created_by == team.author


# --- Schema and docs -------------------------------------------------------------------

def test_schema_documents_request_and_response_bodies(db):
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    paths = schema["paths"]
    for path in [
        "/api/auth/token/", "/api/projects/", "/api/projects/{id}/", "/api/worlds/", "/api/worlds/{id}/",
        "/api/worlds/{id}/documents/", "/api/documents/{id}/", "/api/tasks/", "/api/tasks/{id}/",
        "/api/tasks/{id}/rubric/", "/api/tasks/{id}/rubric/criteria/", "/api/criteria/{id}/", "/api/tasks/{id}/submit/",
        "/api/submissions/", "/api/submissions/{id}/", "/api/review-queue/", "/api/review-queue/claim-next/",
        "/api/submissions/{id}/release/", "/api/submissions/{id}/decision/", "/api/packs/", "/api/packs/{id}/",
        "/api/packs/{id}/download/",
    ]:
        assert path in paths, path
    patch = paths["/api/worlds/{id}/"]["patch"]
    assert "revision" in schema["components"]["schemas"]["PatchedWorldUpdateRequest"]["required"]
    assert patch["requestBody"]["content"]["application/json"]
    assert set(patch["responses"]) >= {"200", "400", "404", "409"}
    assert {p["name"]: p["schema"]["type"] for p in patch["parameters"]}["id"] == "integer"
    assert "application/zip" in paths["/api/packs/{id}/download/"]["get"]["responses"]["200"]["content"]
    assert set(paths["/api/review-queue/claim-next/"]["post"]["responses"]) == {"200", "204", "400", "401", "403", "429"}
    assert "token" in schema["components"]["schemas"]["Token"]["properties"]


def test_docs_page_is_served_from_static_with_no_cdn(db):
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"cdn|jsdelivr|unpkg|cdnjs|googleapis", html, re.IGNORECASE)
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("swagger-ui-bundle.js" in a for a in assets)
    for asset in assets:
        assert asset.startswith("/static/drf_spectacular_sidecar/") or asset.startswith("/api/docs/"), asset
        if asset.startswith("/static/"):
            served = APIClient().get(asset)
            assert served.status_code == 200, asset
            # Reading a streamed body to the end closes it (the test client's wrapper).
            assert b"".join(served.streaming_content) if served.streaming else served.content
    # The split view serves its init script from our origin (CSP script-src 'self').
    script = next(a for a in assets if a.startswith("/api/docs/"))
    assert APIClient().get(script.replace("&amp;", "&")).status_code == 200


def test_schema_is_valid_openapi_without_warnings(db, tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3")
