"""Whatever a user or a model wrote — file content, email headers and bodies, chat text,
event fields, a sandbox's label, an agent's writes — renders inert on every replica
screen: no script, no event handler, no javascript: URL, no injected hx-* attribute, and
no remote image. What it said is still shown, as text."""

import pytest
from django.urls import reverse

from authoring import services as authoring_services
from authoring.models import DocumentKind
from tests.replica.conftest import Page, app_url, write
from workspace.services import overlay_create

EVIL = ('<script>alert("evil")</script><img src="https://evil.example/x.png" onerror="alert(1)">'
        '<a href="javascript:alert(1)">click me</a><div hx-get="/evil-hx" hx-trigger="load">boom</div>'
        '[md link](javascript:alert(2)) <svg onload=alert(3)></svg> <iframe src="https://evil.example"></iframe>')
SENDER = "Eve <eve@evil.example>"
URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "hx-get",
    "hx-post",
    "hx-put",
    "hx-patch",
    "hx-delete",
    "hx-push-url",
    "hx-trigger",
}


@pytest.fixture
def poisoned(team, data_room):
    """Every field a person or a model writes, in the world and in a sandbox, carries EVIL."""
    user = team.author
    for path in ("Evil/Notes.md", "Evil/Memo.docx"):
        authoring_services.document_create(world=data_room, user=user, path=path, content=EVIL)
    authoring_services.document_create(world=data_room, user=user, path="Mail/Inbox/Evil", kind=DocumentKind.EMAIL, content=EVIL, metadata={
        "from": SENDER, "to": "Priya <p@x.example>", "subject": EVIL, "date": "2026-02-26T09:00:00+00:00", "attachments": EVIL})
    authoring_services.document_create(world=data_room, user=user, path="Chat/evil/1", kind=DocumentKind.CHAT, content=EVIL, metadata={
        "channel": "ops", "from": SENDER, "date": "2026-03-02T09:00:00+00:00"})
    authoring_services.document_create(world=data_room, user=user, path="Calendar/Evil", kind=DocumentKind.EVENT, content=EVIL, metadata={
        "subject": EVIL, "start": "2026-03-03T09:00:00+00:00", "end": "2026-03-03T10:00:00+00:00", "location": EVIL, "attendees": SENDER})
    sandbox = overlay_create(world=data_room, user=user, label=EVIL[:190])
    write(data_room, sandbox, "write_file", {"path": "Work/Evil.md", "content": EVIL})
    write(data_room, sandbox, "send_email", {"to": ["a@b.example"], "subject": "Hi <script>alert(4)</script>", "body": EVIL})
    write(data_room, sandbox, "post_message", {"channel": "ops", "text": EVIL})
    write(data_room, sandbox, "create_event", {"subject": EVIL[:150], "start": "2026-03-04T09:00:00+00:00",
                                               "end": "2026-03-04T10:00:00+00:00", "description": EVIL})
    return sandbox


def pages(world, sandbox) -> list[str]:
    urls = [reverse("overlay-changes", args=[sandbox.pk]), reverse("world-sandboxes", args=[world.pk])]
    for scope, pk in (("worlds", world.pk), ("overlays", sandbox.pk)):
        urls += [app_url("drive", scope, pk, f"?path={p}") for p in ("Evil/Notes.md", "Evil/Memo.docx", "Work/Evil.md")]
        urls += [app_url("mail", scope, pk, "?id=Mail/Inbox/Evil"), app_url("mail", scope, pk, "?q=alert"),
                 app_url("chat", scope, pk, "?channel=ops"), app_url("calendar", scope, pk),
                 app_url("calendar", scope, pk, "?view=week&week=2026-03-02")]
    return urls


def test_every_screen_renders_the_payload_inert(author_client, data_room, poisoned):
    for url in pages(data_room, poisoned):
        response = author_client.get(url)
        assert response.status_code == 200, url
        page = Page(response)
        for element in page.elements:
            assert element.tag not in ("img", "svg", "iframe", "object", "embed"), (url, element)
            if element.tag == "script":
                assert element.attrs.get("src", "").startswith("/static/") and not element.text, (url, element)
            for name, value in element.attrs.items():
                assert not name.startswith("on"), (url, element)
                if name in URL_ATTRIBUTES:  # (text attributes such as a confirm message may quote the payload, escaped)
                    assert "javascript:" not in value.lower() and "evil.example" not in value and "evil-hx" not in value, (url, element)
        assert "alert(" in page.text or "Work/Evil.md" in url or "There is no file" in page.text, url  # shown as text, not run


def test_the_payload_is_still_readable_as_text(author_client, data_room, poisoned):
    mail = Page(author_client.get(app_url("mail", "overlays", poisoned.pk, "?id=Mail/Inbox/Evil")))
    body = mail.find("replica-body")[0].text
    assert body.startswith('<script>alert("evil")</script><img src="https://evil.example/x.png"')
    chat = Page(author_client.get(app_url("chat", "worlds", data_room.pk, "?channel=ops")))
    assert chat.texts("replica-body")[0].startswith("<script>")
