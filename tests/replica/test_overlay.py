"""The same screens over an overlay: what an agent wrote through the tools is shown and
marked (badge + tint) on the overlay's pages and nowhere on the world's; the Changes page
shows it as diffs; sandboxes are created, listed and deleted from the world page."""

import pytest
from django.urls import reverse

from tests.replica.conftest import Page, app_url, fragment, hx, marked, write
from tests.workspace.conftest import CALL, NOTES
from workspace.models import Overlay
from workspace.services import overlay_create, overlay_entry_upsert

OVERLAYS, WORLDS = "overlays", "worlds"


def diff_lines(page: Page) -> list[tuple[str, str]]:
    """(kind, text) of every line of every diff: add, del, hunk, meta or context."""
    return [(c.removeprefix("replica-diff-"), e.text) for e in page.find(tag="span") for c in e.classes if c.startswith("replica-diff-")]
MEMO = "# Memo\n\nThe price is $12m.\n"


@pytest.fixture
def agent_work(data_room, overlay):
    """One of every write the agent can make, through the tool layer."""
    write(data_room, overlay, "write_file", {"path": "Work/Memo.md", "content": MEMO})
    write(data_room, overlay, "write_file", {"path": "Deal/Notes.md", "content": NOTES.replace("10%", "15%")})
    write(data_room, overlay, "delete_file", {"path": "Finance/Payments.csv"})
    write(
        data_room, overlay, "send_email", {"to": ["Hannah Cole <hannah.cole@beta.example>"], "subject": "Escrow", "body": "We propose 15%."}
    )
    write(data_room, overlay, "post_message", {"channel": "finance", "text": "Escrow memo is in Work/."})
    write(data_room, overlay, "create_event", {"subject": "Escrow call", "start": "2026-03-05T09:00:00+00:00",
                                               "end": "2026-03-05T09:30:00+00:00",
                                               "attendees": ["Hannah Cole <hannah.cole@beta.example>"], "location": "Room 4"})
    write(data_room, overlay, "update_event", {"id": CALL, "location": "Room 1"})
    return overlay


def test_overlay_drive_marks_added_modified_and_deleted_files(author_client, data_room, agent_work):
    pk = agent_work.pk
    page = Page(author_client.get(app_url("drive", OVERLAYS, pk)))
    banner = page.find(id="replica-banner")[0].text
    assert "Sandbox" not in banner and "Rollout workspace “trial 1”" in banner and "7 changes" in banner
    assert [e.text for e in page.find("replica-badge") if e.tag == "span"][:3] == ["4 added", "2 modified", "1 deleted"]
    assert "Work" in [e.text for e in page.find("replica-folder")] and page.find("replica-tab-changes")[0].text == "Changes 7"

    work = fragment(author_client.get(app_url("drive", OVERLAYS, pk, "?folder=Work"), **hx("replica-drive")), "replica-drive")
    assert marked(work, "added") == ["MD Memo.md Added 5 words"]
    deal = Page(author_client.get(app_url("drive", OVERLAYS, pk, "?folder=Deal")))
    assert marked(deal, "modified") == ["MD Notes.md Modified 9 words"]
    finance = Page(author_client.get(app_url("drive", OVERLAYS, pk, "?folder=Finance")))
    assert marked(finance, "deleted") == ["CSV Payments.csv Deleted 2 rows"]

    viewer = fragment(author_client.get(app_url("drive", OVERLAYS, pk, "?path=Deal/Notes.md"), **hx("replica-viewer")), "replica-viewer")
    assert "Changed in this run." in viewer.text and "15% of the price" in viewer.text
    original = Page(author_client.get(app_url("drive", OVERLAYS, pk, "?path=Deal/Notes.md&original=1")))
    assert "the world's original" in original.text and "10% of the price" in original.find(id="replica-viewer")[0].text
    gone = Page(author_client.get(app_url("drive", OVERLAYS, pk, "?path=Finance/Payments.csv")))
    assert "Deleted in this run." in gone.text and "Harbour Bank" in gone.text and not gone.find(id="replica-download")
    added = Page(author_client.get(app_url("drive", OVERLAYS, pk, "?path=Work/Memo.md")))
    assert added.find(id="replica-download")[0].attrs["href"] == reverse("overlay-file-download", args=[pk]) + "?path=Work/Memo.md"


def test_overlay_mail_chat_and_calendar_mark_what_the_agent_wrote(author_client, data_room, agent_work):
    pk = agent_work.pk
    mail = Page(author_client.get(app_url("mail", OVERLAYS, pk)))
    sent = mail.find("replica-conversation")[0]  # the newest conversation: what the agent just sent
    assert marked(mail, "added") == [sent.text]
    assert sent.text.startswith("To: Hannah Cole <hannah.cole@beta.example>") and sent.text.endswith("Escrow Sent Added We propose 15%.")
    thread = Page(author_client.get(app_url("mail", OVERLAYS, pk, "?q=escrow")))
    assert thread.texts("replica-subject") == ["Escrow", "RE: RE: Price"]

    chat = Page(author_client.get(app_url("chat", OVERLAYS, pk)))
    assert [e.text for e in chat.find("replica-channel-link")][1].startswith("#finance") and chat.find("replica-dot", tag="span")
    finance = fragment(author_client.get(app_url("chat", OVERLAYS, pk, "?channel=finance"), **hx("replica-chat")), "replica-chat")
    added = marked(finance, "added")
    assert len(added) == 1 and added[0].startswith("A Agent ") and added[0].endswith("Posted by the agent Escrow memo is in Work/.")
    assert finance.texts("replica-body") == ["Cap table updated for the option pool.", "Escrow memo is in Work/."]  # in order

    agenda = Page(author_client.get(app_url("calendar", OVERLAYS, pk)))
    assert [t.split(" Where")[0] for t in marked(agenda, "added")] == ["09:00–09:30 UTC Escrow call Created by the agent"]
    assert [t.split(" Where")[0] for t in marked(agenda, "modified")] == ["15:00–16:00 UTC Weekly diligence call Updated"]
    assert "Room 1" in marked(agenda, "modified")[0]
    week = Page(author_client.get(app_url("calendar", OVERLAYS, pk, "?view=week")))
    assert week.texts("replica-week-label") == ["2 Mar – 8 Mar 2026"]  # the week of the first changed event
    assert [e.text for e in week.find("replica-event") if {"replica-added", "replica-modified"} & e.classes] == [
        "15:00–16:00 Weekly diligence call Room 1 Priya Raman, Hannah Cole Modified", "09:00–09:30 Escrow call Room 4 Hannah Cole Added"]


@pytest.mark.parametrize("app", ["drive", "mail", "chat", "calendar"])
def test_the_world_pages_show_none_of_the_overlay(author_client, data_room, agent_work, app):
    for query in ("", "?folder=Work", "?folder=Finance", "?channel=finance", "?view=week"):
        page = Page(author_client.get(app_url(app, WORLDS, data_room.pk, query)))
        assert not any(marked(page, change) for change in ("added", "modified", "deleted"))
        assert not page.find(id="replica-banner") and not page.find("replica-dot")
        for written in ("Memo.md", "We propose 15%", "Escrow memo", "Escrow call", "Room 1"):
            assert written not in page.text


def test_changes_page_shows_every_change_as_a_readable_diff(author_client, data_room, agent_work):
    url = reverse("overlay-changes", args=[agent_work.pk])
    page = Page(author_client.get(url))
    assert (
        "1 file added · 1 file modified · 1 file deleted · 1 email sent · 1 chat message posted · 1 event created · 1 event updated"
        in page.text
    )
    cards = page.find("replica-change", tag="article")
    assert [c.text.split(" Open in")[0] for c in cards] == [
        "Added File Work/Memo.md", "Modified File Deal/Notes.md", "Deleted File Finance/Payments.csv",
        "Sent Email Escrow " + cards[3].text.split("Escrow ", 1)[1].split(" Open in")[0],
        "Posted Chat message Message in #finance " + cards[4].text.split("#finance ", 1)[1].split(" Open in")[0],
        "Created Event Escrow call " + cards[5].text.split("Escrow call ", 1)[1].split(" Open in")[0],
        f"Updated Event Weekly diligence call {CALL}",
    ]
    notes = cards[1]
    assert "replica-modified" in notes.classes
    lines = diff_lines(page)
    assert ("del", "-The escrow is 10% of the price.") in lines and ("add", "+The escrow is 15% of the price.") in lines
    assert ("hunk", "@@ -1,3 +1,3 @@") in lines and ("context", "# Deal notes") in lines
    assert ("add", "We propose 15%.") in lines  # a sent email, shown whole
    assert ("del", "2026-01-05,Harbour Bank,125000") in lines  # a deleted file, shown whole
    assert ("del", "-Location: Video call") in lines and ("add", "+Location: Room 1") in lines  # an updated event

    mail_only = fragment(author_client.get(url + "?app=mail", **hx("replica-changes")), "replica-changes")
    assert [c.text.split(" Open in")[0][:11] for c in mail_only.find("replica-change", tag="article")] == ["Sent Email "]
    assert [e.text for e in mail_only.find("is-active")] == ["Mail 1"]


def test_a_modified_files_diff_is_escaped_and_linked_from_drive(author_client, data_room, overlay):
    write(data_room, overlay, "write_file", {"path": "Deal/Notes.md", "content": NOTES + "<script>alert(1)</script>\n"})
    response = author_client.get(reverse("overlay-changes", args=[overlay.pk]))
    body = response.content.decode()
    assert "<script>alert" not in body and "+&lt;script&gt;alert(1)&lt;/script&gt;" in body
    drive = Page(author_client.get(app_url("drive", OVERLAYS, overlay.pk, "?path=Deal/Notes.md")))
    link = next(e for e in drive.elements if e.tag == "a" and e.text == "See what changed")
    anchor = link.attrs["href"].split("#")[1]
    assert Page(response).find(id=anchor)[0].text.startswith("Modified File Deal/Notes.md")


def test_changes_page_of_an_untouched_sandbox_says_what_will_appear(author_client, team, data_room):
    sandbox = overlay_create(world=data_room, user=team.author, label="Empty")
    page = Page(author_client.get(reverse("overlay-changes", args=[sandbox.pk])))
    assert "Nothing has changed in this sandbox yet." in page.text and "Sandbox “Empty”" in page.text


def test_overlay_file_download_renders_the_overlays_version_as_an_attachment(author_client, data_room, overlay):
    write(data_room, overlay, "write_file", {"path": "Work/Sum.xlsx", "content": "## Sheet: S\n|   | A |\n|---|---|\n| 1 | =2*3 |\n"})
    url = reverse("overlay-file-download", args=[overlay.pk])
    response = author_client.get(url + "?path=Work/Sum.xlsx")
    assert response.status_code == 200 and response.content[:2] == b"PK"
    assert response["Content-Disposition"] == 'attachment; filename="Sum.xlsx"'
    assert response["X-Content-Type-Options"] == "nosniff" and "sandbox" in response["Content-Security-Policy"]
    html_named = author_client.get(url + "?path=Deal/Notes.md")
    assert html_named["Content-Disposition"].startswith("attachment") and html_named["Content-Type"].startswith("text/markdown")
    assert author_client.get(url + "?path=Work/Nope.md").status_code == 404
    overlay_entry_upsert(overlay=overlay, path="Work/Broken.xlsx", kind="file", format="xlsx",
                         content="## Sheet: S\n|   | A |\n|---|---|\n| 1 | =NOPE(1) |\n", metadata={})
    broken = author_client.get(url + "?path=Work/Broken.xlsx")
    assert broken.status_code == 422 and "cannot be built as a file" in broken.content.decode()


# --- Sandboxes -----------------------------------------------------------------------------

def test_sandbox_create_list_and_delete_with_htmx(author_client, team, data_room):
    url = reverse("world-sandboxes", args=[data_room.pk])
    empty = fragment(author_client.get(url, **hx("replica-sandboxes")), "replica-sandboxes")
    assert "No sandbox yet." in empty.text
    created = fragment(author_client.post(url, {"label": "  Try  the memo "}, **hx("replica-sandboxes")), "replica-sandboxes")
    sandbox = Overlay.objects.get(world=data_room)
    assert (sandbox.label, sandbox.purpose, sandbox.created_by) == ("Try the memo", "sandbox", team.author)
    row = created.find("replica-added", tag="tr")[0]
    assert row.text.startswith(f"Try the memo #{sandbox.pk} New") and f"by {team.author.username}" in row.text
    assert row.text.endswith("Drive · Mail · Chat · Calendar · Changes Delete…")
    links = [e.attrs["href"] for e in created.find(tag="a")]
    confirm = reverse("sandbox-delete", args=[sandbox.pk])
    assert f"{confirm}?next={reverse('world-editor', args=[data_room.pk])}%23replica-sandboxes" in links  # it asks first
    assert app_url("mail", OVERLAYS, sandbox.pk) in links and reverse("overlay-changes", args=[sandbox.pk]) in links
    overlay_create(world=data_room, user=team.author, label="a trial", purpose="rollout")  # a trial run's overlay is not a sandbox
    listed = Page(author_client.get(url))
    assert [r.text.split(" #")[0] for r in listed.find(tag="tr")[1:]] == ["Try the memo"]

    gone = fragment(author_client.post(reverse("sandbox-delete", args=[sandbox.pk]), **hx("replica-sandboxes")), "replica-sandboxes")
    assert "No sandbox yet." in gone.text and not Overlay.objects.filter(pk=sandbox.pk).exists()


def test_sandbox_create_and_delete_without_javascript(author_client, data_room):
    response = author_client.post(reverse("world-sandboxes", args=[data_room.pk]), {"label": "Plain form"})
    sandbox = Overlay.objects.get(world=data_room)
    assert response.status_code == 302 and response["Location"] == app_url("drive", OVERLAYS, sandbox.pk)
    response = author_client.post(reverse("sandbox-delete", args=[sandbox.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[data_room.pk])
    assert not Overlay.objects.exists()


def test_reviewers_read_but_cannot_create_or_delete_sandboxes(client, team, data_room):
    sandbox = overlay_create(world=data_room, user=team.author, label="Mine")
    client.force_login(team.reviewer)
    listed = Page(client.get(reverse("world-sandboxes", args=[data_room.pk])))
    assert "Mine" in listed.text and not listed.find(id="replica-sandbox-label") and "Delete" not in listed.text
    refused = client.post(reverse("world-sandboxes", args=[data_room.pk]), {"label": "x"}, **hx("replica-sandboxes"))
    assert refused.status_code == 403 and "Not done." in refused.content.decode()
    refused = client.post(reverse("sandbox-delete", args=[sandbox.pk]), **hx("replica-sandboxes"))
    assert refused.status_code == 403
    assert list(Overlay.objects.values_list("label", flat=True)) == ["Mine"]
    drive = Page(client.get(app_url("drive", OVERLAYS, sandbox.pk)))
    assert "Sandbox “Mine”" in drive.find(id="replica-banner")[0].text and "Delete sandbox" not in drive.text


def test_a_trial_runs_overlay_is_not_deleted_as_a_sandbox(author_client, overlay):
    response = author_client.post(reverse("sandbox-delete", args=[overlay.pk]), **hx("replica-sandboxes"))
    assert response.status_code == 422 and "kept for grading" in response.content.decode()
    assert Overlay.objects.filter(pk=overlay.pk).exists()
