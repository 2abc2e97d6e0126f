"""Who may come in without signing in: LoginRequiredMiddleware guards every page by
default, and only the views that say so are public.

Walked over the URL configuration itself, so a page added tomorrow is covered: it is
protected unless it is on the public list below, and the list is checked to be exact.
"""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

# Public pages of the site (the API and MCP authenticate themselves: see below).
PUBLIC_PAGES = {"login", "logout"}
# The API views that need no credentials at all.
# (api-not-found: the JSON 404 of any address under /api/ that names no endpoint)
PUBLIC_API = {"api-schema", "api-docs", "api-token", "api-not-found"}


def _routes(patterns, prefix=""):
    """(url with sample arguments, name, callback) for every route under `patterns`."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            route = prefix + str(pattern.pattern)
            # Every converter here takes a number except the replica's scope and a format key.
            url = re.sub(r"<replica_scope:\w+>", "worlds", route)
            url = re.sub(r"<slug:\w+>", "taskwright", url)
            yield "/" + re.sub(r"<(?:\w+:)?\w+>", "7", url), pattern.name, pattern.callback


def _site_routes():
    return [r for r in _routes(get_resolver().url_patterns) if not r[0].startswith(("/admin/", "/api/", "/mcp/"))]


def _api_routes():
    return [r for r in _routes(get_resolver().url_patterns) if r[0].startswith("/api/")]


def test_the_public_lists_name_real_views():
    names = {name for _, name, _ in _site_routes()} | {name for _, name, _ in _api_routes()}
    assert names >= PUBLIC_PAGES | PUBLIC_API
    exempt = {name for _, name, callback in _site_routes() if not getattr(callback, "login_required", True)}
    assert exempt == PUBLIC_PAGES


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_page_sends_an_anonymous_visitor_to_sign_in(client, method):
    routes = [r for r in _site_routes() if r[1] not in PUBLIC_PAGES]
    assert len(routes) > 50  # the walk found the site's pages
    for url, name, _ in routes:
        response = getattr(client, method)(url, HTTP_HX_REQUEST="true") if method == "post" else client.get(url)
        assert response.status_code == 302, (name, url, response.status_code)
        assert response["Location"] == f"{reverse('login')}?next={url}", name


@pytest.mark.django_db
def test_the_sign_in_page_is_public(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200 and 'name="password"' in response.content.decode()


@pytest.mark.django_db
def test_signing_out_while_signed_out_lands_on_sign_in(client):
    response = client.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == reverse("login")  # not ?next=/logout/


@pytest.mark.django_db
def test_the_api_schema_and_docs_stay_public():
    assert APIClient().get(reverse("api-schema") + "?format=json").status_code == 200
    assert APIClient().get(reverse("api-docs")).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post", "patch", "delete"])
def test_every_api_endpoint_answers_401_json_not_a_redirect(method):
    client = APIClient()
    routes = [r for r in _api_routes() if r[1] not in PUBLIC_API]
    assert len(routes) > 40
    for url, name, _ in routes:
        # DRF authenticates before it looks for the method's handler: 401 even where it would be a 405.
        response = getattr(client, method)(url, format="json") if method != "get" else client.get(url)
        assert response.status_code == 401, (name, method, response.status_code)
        assert response["Content-Type"] == "application/json", name
        assert response.json() == {"detail": "Authentication credentials were not provided."}, name
        assert response["WWW-Authenticate"] == "Token", name


@pytest.mark.django_db
def test_the_token_endpoint_needs_no_credentials():
    response = APIClient().post(reverse("api-token"), {"username": "nobody", "password": "x"}, format="json")
    assert response.status_code == 400 and "detail" in response.json()


@pytest.mark.django_db
def test_mcp_answers_401_not_a_redirect(client):
    for url in (reverse("mcp-world", args=[7]), reverse("mcp-overlay", args=[7])):
        response = client.post(url, "{}", content_type="application/json")
        assert response.status_code == 401, url
        assert response.json()["error"]["message"].startswith("Send an API token")


@pytest.mark.django_db
def test_the_admin_still_asks_for_its_own_sign_in(client):
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.get("/admin/login/").status_code == 200
