"""Every 4xx under /api/ is a JSON body, also when Django answers before any API view runs."""

import pytest
from django.test import Client


@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/packs/1/download/not%20a%20slug/", "/api/worlds/1/nope"])
def test_an_unknown_api_url_is_a_json_404(db, path):
    response = Client().get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and response.json() == {"detail": "Not found."}


def test_a_refused_host_is_a_json_400_under_the_api(db):
    response = Client(HTTP_HOST="evil.example").get("/api/projects/")
    assert response.status_code == 400 and response.json() == {"detail": "Bad request."}


def test_pages_keep_their_html_error_pages(db, team):
    client = Client()
    client.force_login(team.author)
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
