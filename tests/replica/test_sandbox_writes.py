"""A sandbox's apps answering the author, through the pages: each form works as a plain
POST (redirected to what it wrote) and with htmx (the updated fragment, the header told to
refresh its count); a bad input comes back with the error next to its field and nothing
typed lost; viewers are refused, outsiders get 404, a trial run's workspace takes no hand
edits; every change has its Discard, and deleting the sandbox asks first."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.replica.conftest import Page, app_url, fragment, hx
from tests.workspace.conftest import CALL, CHAT_ROOT, HANNAH, NOTES, REPLY2
from workspace.models import Overlay, OverlayEntry
from workspace.services import overlay_create
from workspace.tools import Workspace

OVERLAYS = "overlays"


@pytest.fixture
def sandbox(team, data_room):
    return overlay_create(world=data_room, user=team.author, label="Try the memo")


def post(client, name: str, overlay, data: dict, **headers):
    return client.post(reverse(name, args=[overlay.pk]), data, **headers)


def entries(overlay) -> list[tuple[str, str]]:
    return list(OverlayEntry.objects.filter(overlay=overlay).order_by("id").values_list("action", "path"))


def field_error(page: Page, field_id: str) -> str:
    """The error shown next to a field, which the field itself names as describing it."""
    control = page.find(id=field_id)[0]
    assert control.attrs.get("aria-invalid") == "true" and f"{field_id}_error" in control.attrs["aria-describedby"]
    return page.find(id=f"{field_id}_error")[0].text


def test_mail_compose_send_and_reply_as_plain_forms(author_client, sandbox):
    compose = Page(author_client.get(app_url("mail", OVERLAYS, sandbox.pk, "?compose=1")))
    assert [e.text for e in compose.find(tag="label")][:4] == ["To", "Cc", "Subject", "Message"]
    response = post(author_client, "sandbox-mail-send", sandbox, {"to": HANNAH, "cc": "", "subject": "Escrow", "body": "We propose 15%."})
    (_, path), = entries(sandbox)
    assert response.status_code == 302 and response["Location"] == app_url("mail", OVERLAYS, sandbox.pk) + "?id=" + path.replace(
        "/", "%2F").replace(" ", "+")
    thread = Page(author_client.get(response["Location"]))
    assert "Sent. The email is in Mail/Sent" in thread.text and "We propose 15%." in thread.find(id="replica-reading")[0].text
    assert "Sent in this sandbox" in thread.text

    reading = Page(author_client.get(app_url("mail", OVERLAYS, sandbox.pk, f"?id={REPLY2}")))
    assert reading.find(id="replica-reply-form") and reading.find(tag="input", id="id_body") == [] and reading.find(id="id_body")
    response = post(author_client, "sandbox-mail-reply", sandbox, {"id": REPLY2, "body": "Agreed."})
    assert response.status_code == 302 and len(entries(sandbox)) == 2
    assert Workspace(sandbox.world, sandbox).email(entries(sandbox)[1][1]).thread == "Mail/Inbox/2026-02-20 Price"
    gone = post(author_client, "sandbox-mail-reply", sandbox, {"id": "Mail/Inbox/nope", "body": "x"})
    assert gone.status_code == 422 and "No email with id 'Mail/Inbox/nope'" in Page(gone).find("replica-refusal")[0].text


def test_mail_with_htmx_returns_the_mailbox_and_refreshes_the_header(author_client, sandbox):
    response = post(author_client, "sandbox-mail-send", sandbox, {"to": HANNAH, "subject": "Escrow", "body": "x"}, **hx("replica-mailbox"))
    mailbox = fragment(response, "replica-mailbox")
    assert response["HX-Trigger"] == "sandbox-changed"
    assert response["HX-Push-Url"].startswith(app_url("mail", OVERLAYS, sandbox.pk) + "?id=")
    assert mailbox.find("replica-conversation")[0].text.startswith("To: Hannah Cole")
    header = fragment(author_client.get(app_url("mail", OVERLAYS, sandbox.pk), **hx("replica-head")), "replica-head")
    assert "1 change" in header.find(id="replica-banner")[0].text and header.find("replica-tab-changes")[0].text == "Changes 1"


def test_a_bad_email_comes_back_with_errors_next_to_the_fields_and_nothing_lost(author_client, sandbox):
    data = {"to": "Hannah, not an address", "cc": "tom@", "subject": "", "body": "Keep this text."}
    response = post(author_client, "sandbox-mail-send", sandbox, data)
    page = Page(response)
    assert response.status_code == 422 and entries(sandbox) == []
    assert field_error(page, "id_to").startswith("“Hannah” is not an email address")
    assert field_error(page, "id_cc").startswith("“tom@” is not an email address")
    assert field_error(page, "id_subject") == "This field is required."
    assert page.find(id="id_to")[0].attrs["value"] == "Hannah, not an address" and page.find(id="id_body")[0].text == "Keep this text."
    refused = post(author_client, "sandbox-mail-send", sandbox, data, **hx("replica-mailbox"))  # htmx: the mailbox, the form in it
    body = refused.content.decode().lstrip()
    assert refused.status_code == 422 and "<html" not in body and 'id="replica-mailbox"' in body.split(">", 1)[0]
    assert field_error(Page(refused), "id_subject") == "This field is required." and entries(sandbox) == []


def test_chat_post_and_reply_in_a_thread(author_client, sandbox):
    page = Page(author_client.get(app_url("chat", OVERLAYS, sandbox.pk, "?channel=deal-team")))
    assert page.find(id="replica-post-form") and len(page.find("replica-reply", tag="details")) == 2  # one per thread
    response = post(author_client, "sandbox-chat-post", sandbox, {"channel": "deal-team", "text": "The memo is in Work/."})
    assert response.status_code == 302 and response["Location"].startswith(app_url("chat", OVERLAYS, sandbox.pk, "?channel=deal-team#"))
    response = post(author_client, "sandbox-chat-reply", sandbox, {"id": CHAT_ROOT, "channel": "deal-team", "text": "Kestrel said yes."},
                    **hx("replica-chat"))
    chat = fragment(response, "replica-chat")
    assert response["HX-Trigger"] == "sandbox-changed"
    assert chat.find(id="replica-notice")[0].text == "Replied in the thread."  # said on the screen, as a plain form's redirect says it
    assert chat.texts("replica-body")[-1] == "The memo is in Work/." and "Kestrel said yes." in chat.text
    assert next(e.text.split(" Posted")[0] for e in chat.find("replica-added", tag="li")).startswith("A Agent")

    empty = post(author_client, "sandbox-chat-reply", sandbox, {"id": CHAT_ROOT, "channel": "deal-team", "text": " "})
    refused = Page(empty)
    assert empty.status_code == 422 and len(entries(sandbox)) == 2
    open_reply = [d for d in refused.find("replica-reply", tag="details") if "open" in d.attrs]
    assert len(open_reply) == 1 and "This field is required." in open_reply[0].text
    gone = post(author_client, "sandbox-chat-reply", sandbox, {"id": "Chat/nope", "channel": "deal-team", "text": "x"})
    assert gone.status_code == 422 and "No chat message with id 'Chat/nope'" in Page(gone).find("replica-refusal")[0].text


def test_events_added_edited_and_deleted(author_client, sandbox):
    new = Page(author_client.get(app_url("calendar", OVERLAYS, sandbox.pk, "?new=1")))
    assert new.find(id="id_zone")[0].tag == "select"
    assert [o.text for o in new.find(tag="option") if "selected" in o.attrs] == ["UTC"]  # what the world's events are written in
    bad = {"subject": "Escrow call", "start_date": "2026-03-05", "start_time": "10:00", "end_date": "", "end_time": "09:30",
           "zone": "+01:00", "attendees": HANNAH}
    refused = post(author_client, "sandbox-event-create", sandbox, bad)
    assert refused.status_code == 422 and field_error(Page(refused), "id_end_time") == "The end is before the start."
    assert Page(refused).find(id="id_subject")[0].attrs["value"] == "Escrow call" and entries(sandbox) == []

    response = post(author_client, "sandbox-event-create", sandbox, {**bad, "end_time": "10:30"})
    (_, call), = entries(sandbox)
    assert response.status_code == 302
    agenda = Page(author_client.get(app_url("calendar", OVERLAYS, sandbox.pk)))
    card = next(e for e in agenda.find("replica-agenda-event") if "Escrow call" in e.text)
    assert "10:00–10:30 UTC+01:00" in card.text and "Created in this sandbox" in card.text

    response = post(author_client, "sandbox-event-create", sandbox, {"subject": "Offsite", "all_day": "on", "start_date": "2026-03-09",
                                                                     "end_date": "2026-03-10", "zone": "+00:00"}, **hx("replica-calendar"))
    assert "All day – Tue 10 Mar" in fragment(response, "replica-calendar").text

    edit = Page(author_client.get(app_url("calendar", OVERLAYS, sandbox.pk, f"?edit={CALL}")))
    assert edit.find(id="id_start_time")[0].attrs["value"] == "15:00"
    assert edit.find(id="id_subject")[0].attrs["value"] == "Weekly diligence call"
    response = post(author_client, "sandbox-event-update", sandbox, {
        "id": CALL, "subject": "Weekly diligence call", "start_date": "2026-03-04", "start_time": "16:00", "end_time": "17:00",
        "zone": "+00:00", "location": "Room 1"})
    assert response.status_code == 302 and Workspace(sandbox.world, sandbox).event(CALL).location == "Room 1"
    response = post(author_client, "sandbox-event-delete", sandbox, {"id": call}, **hx("replica-calendar"))
    assert "Escrow call" not in fragment(response, "replica-calendar").text and response["HX-Trigger"] == "sandbox-changed"
    assert [a for a, _ in entries(sandbox)] == ["upsert", "upsert"]  # the offsite and the edited call


def test_files_uploaded_edited_and_deleted(author_client, sandbox):
    drive = Page(author_client.get(app_url("drive", OVERLAYS, sandbox.pk, "?folder=Deal")))
    assert drive.find(id="id_folder")[0].attrs["value"] == "Deal"  # an upload lands in the folder on screen
    memo = SimpleUploadedFile("Memo.md", b"# Memo\n\nThe price is $12m.\n")
    response = post(author_client, "sandbox-file-upload", sandbox, {"file": memo, "folder": "Work"})
    assert response.status_code == 302 and response["Location"] == app_url("drive", OVERLAYS, sandbox.pk, "?path=Work%2FMemo.md")
    shown = Page(author_client.get(response["Location"]))
    assert "Uploaded Memo.md: Work/Memo.md." in shown.text and "The price is $12m." in shown.find(id="replica-viewer")[0].text

    missing = post(author_client, "sandbox-file-upload", sandbox, {"folder": "Work"}, **hx("replica-drive"))
    assert missing.status_code == 422 and field_error(Page(missing), "id_file") == "This field is required."
    assert Page(missing).find(id="id_folder")[0].attrs["value"] == "Work"

    editor = Page(author_client.get(app_url("drive", OVERLAYS, sandbox.pk, "?path=Deal/Notes.md&edit=1")))
    assert editor.find(id="id_content")[0].text == " ".join(NOTES.split())
    response = post(author_client, "sandbox-file-edit", sandbox, {"path": "Deal/Notes.md", "content": NOTES.replace("10%", "15%")},
                    **hx("replica-drive"))
    assert "15% of the price" in fragment(response, "replica-drive").find(id="replica-viewer")[0].text
    bad_sheet = post(author_client, "sandbox-file-edit", sandbox, {"path": "Finance/Cap table.xlsx", "content": "| not | a sheet |"})
    assert bad_sheet.status_code == 422 and "not a valid xlsx file" in Page(bad_sheet).text
    assert Page(bad_sheet).find(id="id_content")[0].text == "| not | a sheet |"

    response = post(author_client, "sandbox-file-delete", sandbox, {"path": "Finance/Payments.csv"})
    assert response.status_code == 302 and response["Location"] == app_url("drive", OVERLAYS, sandbox.pk, "?folder=Finance")
    assert entries(sandbox) == [("upsert", "Work/Memo.md"), ("upsert", "Deal/Notes.md"), ("delete", "Finance/Payments.csv")]


def test_changes_are_discarded_one_by_one(author_client, sandbox):
    post(author_client, "sandbox-file-edit", sandbox, {"path": "Deal/Notes.md", "content": "Changed."})
    post(author_client, "sandbox-file-delete", sandbox, {"path": "Finance/Payments.csv"})
    changes_url = reverse("overlay-changes", args=[sandbox.pk])
    page = Page(author_client.get(changes_url))
    assert [e.attrs["aria-label"] for e in page.find("replica-discard")] == [
        "Discard this change: Deal/Notes.md", "Discard this change: Finance/Payments.csv"]
    response = post(author_client, "overlay-entry-discard", sandbox, {"path": "Deal/Notes.md"}, **hx("replica-changes"))
    changes = fragment(response, "replica-changes")
    assert response["HX-Trigger"] == "sandbox-changed" and len(changes.find("replica-change", tag="article")) == 1
    response = post(author_client, "overlay-entry-discard", sandbox, {"path": "Finance/Payments.csv"})
    assert response.status_code == 302 and entries(sandbox) == []
    assert "Nothing has changed in this sandbox yet." in Page(author_client.get(response["Location"])).text
    gone = post(author_client, "overlay-entry-discard", sandbox, {"path": "Finance/Payments.csv"})
    assert gone.status_code == 422 and "no longer in the sandbox" in Page(gone).text


def test_deleting_a_sandbox_asks_first(author_client, team, data_room, sandbox):
    post(author_client, "sandbox-file-delete", sandbox, {"path": "Finance/Payments.csv"})
    post(author_client, "sandbox-chat-post", sandbox, {"channel": "finance", "text": "x"})
    drive_url = app_url("drive", OVERLAYS, sandbox.pk)
    link = Page(author_client.get(drive_url)).find(id="sandbox-delete")[0]
    assert link.tag == "a" and link.attrs["href"] == reverse("sandbox-delete", args=[sandbox.pk]) + "?next=" + drive_url
    confirm = Page(author_client.get(link.attrs["href"]))
    assert "Delete sandbox “Try the memo”? Its 2 changes will be lost; the world “Project Lighthouse” is not affected." in confirm.text
    assert confirm.find(id="sandbox-delete-button")[0].text == "Delete sandbox"
    assert [a.attrs["href"] for a in confirm.find("button", tag="a") if a.text == "Cancel"] == [drive_url]
    assert Overlay.objects.filter(pk=sandbox.pk).exists()  # asking deletes nothing
    response = author_client.post(reverse("sandbox-delete", args=[sandbox.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[data_room.pk])
    assert not Overlay.objects.filter(pk=sandbox.pk).exists()


def test_the_confirmation_refuses_viewers_outsiders_and_trial_runs(client, team, other_team, sandbox, overlay):
    url = reverse("sandbox-delete", args=[sandbox.pk])
    client.force_login(team.reviewer)
    assert client.get(url).status_code == 403
    client.force_login(other_team.author)
    assert client.get(url).status_code == 404
    client.force_login(team.author)
    trial = client.get(reverse("sandbox-delete", args=[overlay.pk]))
    assert trial.status_code == 422 and "kept for grading" in Page(trial).text and not Page(trial).find(id="sandbox-delete-button")
    assert client.get(url + "?next=https://evil.example/").context["back"] == app_url("drive", OVERLAYS, sandbox.pk)


WRITE_ROUTES = [
    ("sandbox-mail-send", {"to": HANNAH, "subject": "x", "body": "x"}, "replica-mailbox"),
    ("sandbox-mail-reply", {"id": REPLY2, "body": "x"}, "replica-mailbox"),
    ("sandbox-chat-post", {"channel": "finance", "text": "x"}, "replica-chat"),
    ("sandbox-chat-reply", {"id": CHAT_ROOT, "channel": "deal-team", "text": "x"}, "replica-chat"),
    ("sandbox-event-create", {"subject": "x", "start_date": "2026-03-05", "start_time": "09:00", "end_time": "10:00", "zone": "+00:00"},
     "replica-calendar"),
    ("sandbox-event-update", {"id": CALL, "subject": "x", "start_date": "2026-03-05", "start_time": "09:00", "end_time": "10:00",
                              "zone": "+00:00"}, "replica-calendar"),
    ("sandbox-event-delete", {"id": CALL}, "replica-calendar"),
    ("sandbox-file-upload", lambda: {"file": SimpleUploadedFile("Memo.md", b"# Memo"), "folder": "Work"}, "replica-drive"),
    ("sandbox-file-edit", {"path": "Deal/Notes.md", "content": "x"}, "replica-drive"),
    ("sandbox-file-delete", {"path": "Deal/Notes.md"}, "replica-drive"),
    ("overlay-entry-discard", {"path": "Work/Seed.md"}, "replica-changes"),
]


def test_viewers_are_refused_outsiders_get_404_and_trial_runs_take_no_hand_edits(client, team, other_team, sandbox, overlay):
    for target_overlay in (sandbox, overlay):
        OverlayEntry.objects.create(overlay=target_overlay, path="Work/Seed.md", format="md", content="seed")
    for name, payload, target in WRITE_ROUTES:  # one world for all of them: the suite's time is counted
        data = payload if isinstance(payload, dict) else payload()
        client.logout()
        assert post(client, name, sandbox, data)["Location"].startswith(reverse("login")), name
        client.force_login(team.reviewer)
        refused = post(client, name, sandbox, data if isinstance(payload, dict) else payload(), **hx(target))
        assert refused.status_code == 403 and refused["Taskwright-Refusal"] == "1", name
        assert "cannot edit content" in Page(refused).text, name
        client.force_login(other_team.admin)
        assert post(client, name, sandbox, data).status_code == 404, name
        client.force_login(team.author)
        trial = post(client, name, overlay, data if isinstance(payload, dict) else payload())
        assert trial.status_code == 422 and "only a sandbox can be changed by hand" in Page(trial).text, name
        assert client.get(reverse(name, args=[sandbox.pk])).status_code == 405, name
    assert entries(sandbox) == entries(overlay) == [("upsert", "Work/Seed.md")]


def test_the_forms_show_only_to_authors_in_a_sandbox(client, team, sandbox, overlay, data_room):
    pages = [("mail", "?compose=1", "replica-compose-form"), ("chat", "?channel=finance", "replica-post-form"),
             ("calendar", "?new=1", "id_subject"), ("drive", "?path=Deal/Notes.md&edit=1", "replica-edit-form")]
    client.force_login(team.author)
    for app, query, form_id in pages:
        assert Page(client.get(app_url(app, OVERLAYS, sandbox.pk, query))).find(id=form_id), app
        assert not Page(client.get(app_url(app, OVERLAYS, overlay.pk, query))).find(id=form_id), app
        assert not Page(client.get(app_url(app, "worlds", data_room.pk, query))).find(id=form_id), app
    assert not Page(client.get(reverse("overlay-changes", args=[overlay.pk]))).find("replica-discard")
    client.force_login(team.reviewer)
    for app, query, form_id in pages:
        assert not Page(client.get(app_url(app, OVERLAYS, sandbox.pk, query))).find(id=form_id), app
