"""A refused permission answers 403 everywhere: on the API with the usual {"detail": ...}
body, on the pages with the same form or fragment as any other rule violation (so htmx
swaps it and the user reads why). A broken rule that is not about the role stays a
400 (API) or 422 (pages); a 403 that is not a refusal (a failed CSRF check) is not
marked, so htmx leaves it to the page's generic message."""

import html
import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.views import REFUSAL_HEADER

HX = {"HTTP_HX_REQUEST": "true"}
REVIEWER_MAY_NOT = "Your role in this project (reviewer) cannot edit content."


@pytest.fixture
def api_for(db):
    def make(user) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return client

    return make


def _criteria(env_task) -> list[str]:
    return list(env_task.rubric_versions.order_by("-number").first().criteria.values_list("text", flat=True))


def _criterion_form(env_task, **overrides) -> dict:
    rubric = env_task.rubric_versions.order_by("-number").first()
    return {"text": "Names the lender", "points": 3, "tag": "essential", "explanation": "", "revision": rubric.revision, **overrides}


def test_api_refusal_is_403_with_the_reason(team, env_task, api_for):
    before = _criteria(env_task)
    rubric = env_task.rubric_versions.get()
    response = api_for(team.reviewer).post(
        f"/api/tasks/{env_task.pk}/rubric/criteria/", {"revision": rubric.revision, "text": "R"}, format="json"
    )
    assert response.status_code == 403
    assert response.json() == {"detail": REVIEWER_MAY_NOT}
    assert _criteria(env_task) == before


def test_api_broken_rule_stays_400(team, env_task, api_for):
    rubric = env_task.rubric_versions.get()
    response = api_for(team.author).post(
        f"/api/tasks/{env_task.pk}/rubric/criteria/", {"revision": rubric.revision, "text": ""}, format="json"
    )
    assert response.status_code == 400 and "detail" in response.json()


def test_htmx_refusal_is_403_with_the_fragment_the_user_reads(client, team, env_task):
    before = _criteria(env_task)
    client.force_login(team.reviewer)
    response = client.post(reverse("criterion-add", args=[env_task.pk]), _criterion_form(env_task), **HX)
    assert response.status_code == 403
    assert response[REFUSAL_HEADER]  # static/js/app.js swaps a 403 only with this header
    fragment = html.unescape(response.content.decode())
    assert fragment.lstrip().startswith('<section id="rubric"')  # the fragment htmx swaps, not a page
    assert 'role="alert"' in fragment and REVIEWER_MAY_NOT in fragment
    assert _criteria(env_task) == before


def test_page_refusal_is_403_with_the_whole_page(client, team, env_task):
    client.force_login(team.reviewer)
    response = client.post(reverse("criterion-add", args=[env_task.pk]), _criterion_form(env_task))
    assert response.status_code == 403
    page = html.unescape(response.content.decode())
    assert "<html" in page and REVIEWER_MAY_NOT in page


def test_htmx_broken_rule_stays_422_unmarked(client, team, env_task):
    client.force_login(team.author)
    response = client.post(reverse("criterion-add", args=[env_task.pk]), _criterion_form(env_task, text=""), **HX)
    assert response.status_code == 422
    assert REFUSAL_HEADER not in response
    assert 'role="alert"' in response.content.decode()


def test_a_failed_csrf_check_is_a_403_htmx_does_not_swap(team, env_task):
    client = Client(enforce_csrf_checks=True)
    client.force_login(team.author)
    response = client.post(reverse("criterion-add", args=[env_task.pk]), _criterion_form(env_task), **HX)
    assert response.status_code == 403
    assert REFUSAL_HEADER not in response


def test_the_schema_documents_403_where_an_operation_can_refuse(db):
    paths = json.loads(APIClient().get("/api/schema/?format=json").content)["paths"]
    refusing = [
        ("/api/tasks/{id}/rubric/criteria/", "post"), ("/api/worlds/{id}/", "patch"), ("/api/packs/", "post"),
        ("/api/submissions/{id}/decision/", "post"), ("/api/batches/{id}/regrade/", "post"), ("/api/worlds/{id}/uploads/", "post"),
        ("/api/draft-jobs/{id}/retry/", "post"), ("/api/worlds/{id}/export/", "get"),
    ]
    for path, method in refusing:
        assert "403" in paths[path][method]["responses"], (path, method)
    for path in ("/api/batches/{id}/grades/", "/api/batches/{id}/rollouts/", "/api/tasks/{id}/rubric/settings/"):
        assert "403" not in paths[path]["get"]["responses"], path
        assert {"400", "404"} <= set(paths[path]["get"]["responses"]), path
