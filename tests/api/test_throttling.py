"""API throttling per token and per client address (429 + Retry-After + JSON), counted in
the shared cache; sign-in limits per address across user names, at both doors."""

import os
import uuid

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests import factories


def _rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


def test_a_token_over_its_rate_gets_429_with_retry_after(api_for, team, settings):
    _rates(settings, token="3/min")
    author = api_for(team.author)
    for _ in range(3):
        assert author.get("/api/projects/").status_code == 200
    refused = author.get("/api/projects/")
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/json"
    assert "throttled" in refused.json()["detail"]
    assert 1 <= int(refused["Retry-After"]) <= 60
    # Per token: another user's token is not held back by this one.
    assert api_for(team.reviewer).get("/api/projects/").status_code == 200


def test_anonymous_requests_are_limited_per_address(team, settings):
    # What is open before sign-in (the token endpoint; an incomplete body, so no sign-in
    # failure is counted). Elsewhere an anonymous request is refused (401) before any throttle.
    _rates(settings, address="2/min")
    client = APIClient()

    def knock(client: APIClient):
        return client.post("/api/auth/token/", {"username": "someone"}, format="json")

    assert knock(client).status_code == 400 and knock(client).status_code == 400
    refused = knock(client)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1 and refused.json()["detail"]
    # Another address is counted apart; a client-sent X-Forwarded-For is not believed.
    assert knock(APIClient(REMOTE_ADDR="10.9.8.7")).status_code == 400
    assert knock(APIClient(HTTP_X_FORWARDED_FOR="10.1.1.1")).status_code == 429


def test_the_default_rates_do_not_hold_back_real_use(api_for, team):
    author = api_for(team.author)
    assert all(author.get("/api/projects/").status_code == 200 for _ in range(60))


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
def test_counts_live_in_the_shared_redis_cache(api_for, team, settings):
    # As with REDIS_URL in production: the count outlives this process's cache connection, so
    # every web process (each with its own connection) counts against the one limit.
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["REDIS_URL"],
        "KEY_PREFIX": f"test-throttle-{uuid.uuid4().hex}",
    }}
    _rates(settings, token="2/min")
    author = api_for(team.author)
    assert [author.get("/api/projects/").status_code for _ in range(2)] == [200, 200]
    from django.core.cache import caches

    caches.close_all()
    del caches["default"]  # a new connection, as another process would have
    assert author.get("/api/projects/").status_code == 429


# --- Sign-in: per address across user names ---------------------------------------------------

def test_token_sign_in_from_one_address_with_many_names_is_refused(team, settings):
    settings.LOGIN_ADDRESS_RATE_LIMIT = 5
    client = APIClient()
    for n in range(5):
        wrong = client.post("/api/auth/token/", {"username": f"guess-{n}", "password": "Winter2026!"}, format="json")
        assert wrong.status_code == 400
    # Every name is under its own limit (10), but the address has used up its 5.
    refused = client.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json")
    assert refused.status_code == 429
    assert "Too many failed sign-in attempts" in refused.json()["detail"] and int(refused["Retry-After"]) > 0
    # Another address signs in as usual.
    other = APIClient(REMOTE_ADDR="10.9.8.7").post(
        "/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD}, format="json"
    )
    assert other.status_code == 200 and other.json()["token"]


def test_page_sign_in_from_one_address_with_many_names_is_refused(client, team, settings):
    settings.LOGIN_ADDRESS_RATE_LIMIT = 4
    for n in range(2):  # failures at either door count against the one limit
        APIClient().post("/api/auth/token/", {"username": f"api-guess-{n}", "password": "x"}, format="json")
    for n in range(2):
        assert client.post(reverse("login"), {"username": f"page-guess-{n}", "password": "x"}).status_code == 200
    refused = client.post(reverse("login"), {"username": team.author.username, "password": factories.PASSWORD})
    assert refused.status_code == 429 and "Too many failed sign-in attempts" in refused.content.decode()
    assert "_auth_user_id" not in client.session


def test_behind_a_trusted_proxy_the_forwarded_address_counts(team, settings):
    settings.NUM_PROXIES = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    settings.LOGIN_ADDRESS_RATE_LIMIT = 2
    sprayer = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    for n in range(2):
        sprayer.post("/api/auth/token/", {"username": f"guess-{n}", "password": "x"}, format="json")
    assert sprayer.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD},
        format="json").status_code == 429
    # Everyone else comes through the same proxy, and is not locked out with the sprayer.
    colleague = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.4")
    assert colleague.post("/api/auth/token/", {"username": team.author.username, "password": factories.PASSWORD},
        format="json").status_code == 200
