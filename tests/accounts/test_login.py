import pytest
from django.core.cache import cache
from django.urls import reverse

from accounts.services import login_failure_keys
from tests.factories import PASSWORD


@pytest.fixture(autouse=True)
def _forget_failed_logins(team):
    # Only our keys: the cache may be a Redis shared with the broker.
    keys = {key for u in (team.author, team.reviewer) for key in login_failure_keys(address="127.0.0.1", username=u.username)}
    cache.delete_many(keys)
    yield
    cache.delete_many(keys)


def test_sign_in_and_out(client, team):
    response = client.post(reverse("login"), {"username": team.author.username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard")
    assert client.get(reverse("dashboard")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("dashboard")).status_code == 302


def test_wrong_password_says_so(client, team):
    response = client.post(reverse("login"), {"username": team.author.username, "password": "nope"})
    assert response.status_code == 200 and "do not match" in response.content.decode()


def test_login_is_rate_limited(client, team, settings):
    settings.LOGIN_RATE_LIMIT = (3, 60)
    for _ in range(3):
        client.post(reverse("login"), {"username": team.author.username, "password": "wrong"})
    response = client.post(reverse("login"), {"username": team.author.username, "password": PASSWORD})
    assert response.status_code == 429 and "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("target", ["https://evil.test/", "//evil.test/x", "/\\evil.test"])
def test_next_stays_on_site(client, team, target):
    response = client.post(reverse("login") + f"?next={target}", {"username": team.author.username, "password": PASSWORD, "next": target})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard")


def test_next_on_site_is_followed(client, team):
    response = client.post(reverse("login"), {"username": team.author.username, "password": PASSWORD, "next": "/reviews/"})
    assert response["Location"] == "/reviews/"


def test_csrf_is_enforced_on_session_writes(team, world):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(team.author)
    response = client.post(reverse("document-add", args=[world.pk]), {"path": "x.md", "kind": "file", "target_size": 1})
    assert response.status_code == 403 and world.documents.count() == 2


def test_security_headers(client, team):
    client.force_login(team.author)
    response = client.get(reverse("dashboard"))
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff" and response["X-Frame-Options"] == "DENY"
