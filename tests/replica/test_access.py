"""Every replica route: a member of another project gets 404 (full page and htmx partial,
world and overlay alike), an anonymous visitor is sent to sign in, a reviewer may read
every screen, and the screens answer GET only."""

import pytest
from django.urls import reverse

from tests.replica.conftest import hx
from workspace.services import overlay_create

# (url name, "world" or "overlay", method, query, the partial an htmx request may target)
ROUTES = [
    *[(f"replica-{app}", scope, "get", query, target) for scope in ("world", "overlay") for app, query, target in [
        ("drive", "?path=Finance/Cap table.xlsx", "replica-files"),
        ("mail", "?id=Mail/Inbox/2026-02-20 Price", "replica-mailbox"),
        ("chat", "?channel=finance", "replica-chat"),
        ("calendar", "?view=week", "replica-calendar"),
    ]],
    ("overlay-changes", "overlay", "get", "", "replica-changes"),
    ("overlay-file-download", "overlay", "get", "?path=Deal/Notes.md", None),
    ("world-sandboxes", "world", "get", "", "replica-sandboxes"),
    ("world-sandboxes", "world", "post", "", None),
    ("sandbox-delete", "sandbox", "post", "", None),
]
IDS = [f"{method} {name} on {obj}" for name, obj, method, _, _ in ROUTES]


@pytest.fixture
def objects(team, data_room, overlay):
    return {"world": data_room, "overlay": overlay, "sandbox": overlay_create(world=data_room, user=team.author, label="s")}


def url_for(route, objects) -> str:
    name, obj, _, query, _ = route
    args = [{"world": "worlds", "overlay": "overlays"}[obj], objects[obj].pk] if name.startswith("replica-") else [objects[obj].pk]
    return reverse(name, args=args) + query


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_member_of_another_project_gets_404(client, other_team, objects, route):
    client.force_login(other_team.admin)
    url = url_for(route, objects)
    assert getattr(client, route[2])(url).status_code == 404
    if route[4]:
        assert client.get(url, **hx(route[4])).status_code == 404


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_anonymous_visitors_are_sent_to_sign_in(client, objects, route):
    url = url_for(route, objects)
    response = getattr(client, route[2])(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("route", [r for r in ROUTES if r[2] == "get"], ids=[i for r, i in zip(ROUTES, IDS, strict=True) if r[2] == "get"])
def test_a_reviewer_reads_every_screen_which_answers_get_only(client, team, objects, route):
    client.force_login(team.reviewer)
    url = url_for(route, objects)
    assert client.get(url).status_code == 200
    if route[4]:
        assert client.get(url, **hx(route[4])).status_code == 200
    if route[0] != "world-sandboxes":  # its POST creates a sandbox (tested with the sandboxes)
        assert client.post(url).status_code == 405


def test_an_outsider_cannot_create_or_delete_sandboxes_and_nothing_changes(client, other_team, objects):
    from workspace.models import Overlay

    before = sorted(Overlay.objects.values_list("pk", flat=True))
    client.force_login(other_team.author)
    client.post(reverse("world-sandboxes", args=[objects["world"].pk]), {"label": "x"})
    client.post(reverse("sandbox-delete", args=[objects["sandbox"].pk]))
    assert sorted(Overlay.objects.values_list("pk", flat=True)) == before
