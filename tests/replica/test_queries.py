"""A replica screen costs the same number of queries with 5 items of each kind as with 30:
the Workspace loads a world (and its overlay) in two queries, whatever their size."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from authoring import services as authoring_services
from authoring.models import DocumentKind
from tests.replica.conftest import app_url, hx, write
from workspace.services import overlay_create

ROOT = "Bulk/Mail/0"


def grow(world, sandbox, user, start: int, stop: int) -> None:
    """Items start..stop-1 of every kind in the world, and as many agent writes in the sandbox."""
    for n in range(start, stop):
        authoring_services.document_create(
            world=world, user=user, path=f"Bulk/Folder {n % 3}/File {n}.md", content=f"# File {n}\n\nText {n}."
        )
        authoring_services.document_create(
            world=world, user=user, path=f"Bulk/Mail/{n}", kind=DocumentKind.EMAIL, content=f"Body {n}",
            metadata={"from": "A <a@x.example>", "to": "B <b@x.example>", "subject": f"Mail {n}",
                      "date": f"2026-02-{1 + n % 28:02d}T09:00:00+00:00", **({"thread": ROOT} if n else {})},
        )
        authoring_services.document_create(
            world=world, user=user, path=f"Bulk/Chat/{n}", kind=DocumentKind.CHAT, content=f"Message {n}",
            metadata={"channel": "general", "from": "A <a@x.example>", "date": f"2026-03-{1 + n % 28:02d}T09:00:00+00:00"},
        )
        authoring_services.document_create(
            world=world, user=user, path=f"Bulk/Calendar/{n}", kind=DocumentKind.EVENT, content=f"Agenda {n}",
            metadata={"subject": f"Meeting {n}", "start": f"2026-03-{2 + n % 7:02d}T09:00:00+00:00",
                      "end": f"2026-03-{2 + n % 7:02d}T10:00:00+00:00", "attendees": "A <a@x.example>, B <b@x.example>",
                      "location": "Room"},
        )
        write(world, sandbox, "write_file", {"path": f"Work/Note {n}.md", "content": f"Note {n}"})
        write(world, sandbox, "post_message", {"channel": "general", "text": f"Agent message {n}"})


def urls(world, sandbox) -> dict[str, tuple[str, dict]]:
    found = {}
    for scope, pk in (("worlds", world.pk), ("overlays", sandbox.pk)):
        found |= {
            f"{scope} drive": (app_url("drive", scope, pk, "?path=Bulk/Folder 1/File 1.md"), {}),
            f"{scope} drive folder": (app_url("drive", scope, pk, "?folder=Bulk/Folder 1"), hx("replica-drive")),
            f"{scope} mail thread": (app_url("mail", scope, pk, f"?id={ROOT}"), {}),
            f"{scope} mail search": (app_url("mail", scope, pk, "?q=mail"), hx("replica-mailbox")),
            f"{scope} chat": (app_url("chat", scope, pk, "?channel=general"), {}),
            f"{scope} agenda": (app_url("calendar", scope, pk), {}),
            f"{scope} week": (app_url("calendar", scope, pk, "?view=week&week=2026-03-02"), hx("replica-calendar")),
        }
    found["changes"] = (reverse("overlay-changes", args=[sandbox.pk]), {})
    found["sandboxes"] = (reverse("world-sandboxes", args=[world.pk]), hx("replica-sandboxes"))
    return found


def count(client, url: str, headers: dict) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return len(captured)


def test_query_counts_do_not_grow_with_the_data(client, team):
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Bulk")
    sandbox = overlay_create(world=world, user=team.author, label="bulk")
    client.force_login(team.reviewer)
    grow(world, sandbox, team.author, 0, 5)
    small = {name: count(client, url, headers) for name, (url, headers) in urls(world, sandbox).items()}
    grow(world, sandbox, team.author, 5, 30)
    large = {name: count(client, url, headers) for name, (url, headers) in urls(world, sandbox).items()}
    assert large == small
    # 8 for the replica itself, plus the top bar's two: the unread notifications and the
    # projects whose Packs the user administers.
    assert max(small.values()) <= 10, small


@pytest.mark.parametrize("app", ["drive", "mail", "chat", "calendar"])
def test_the_grown_world_still_shows_everything(client, team, app):
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Bulk")
    sandbox = overlay_create(world=world, user=team.author, label="bulk")
    grow(world, sandbox, team.author, 0, 6)
    client.force_login(team.author)
    body = client.get(app_url(app, "overlays", sandbox.pk, {"drive": "?folder=Work", "chat": "?channel=general",
                                                          "mail": f"?id={ROOT}", "calendar": ""}[app])).content.decode()
    expected = {"drive": "Note 5.md", "chat": "Agent message 5", "mail": "Body 5", "calendar": "Meeting 5"}[app]
    assert expected in body
