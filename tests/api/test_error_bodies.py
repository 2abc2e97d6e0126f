"""Every 4xx under /api/ is a JSON body, also when Django answers before any API view runs."""

import pytest
from django.test import Client


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/", "/api/no-such-thing/", "/api/packs/1/download/not%20a%20slug/", "/api/worlds/1/nope"])
def test_an_unknown_api_url_is_a_json_404(db, settings, path, debug):
    """With DEBUG on too (make run): Django's debug 404 page is HTML."""
    settings.DEBUG = debug
    response = Client().get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"No API endpoint at {path.replace('%20', ' ')}. The endpoints are listed at /api/docs/."}


def test_a_refused_host_is_a_json_400_under_the_api(db):
    response = Client(HTTP_HOST="evil.example").get("/api/projects/")
    assert response.status_code == 400 and response.json() == {"detail": "Bad request."}


def test_pages_keep_their_html_error_pages(db, team):
    client = Client()
    client.force_login(team.author)
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
