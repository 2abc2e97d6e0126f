"""Export → import → export gives the same files, and an import reads each app back."""

import io
import json
import zipfile

import pytest

from authoring.models import Document, World
from core.exceptions import ApplicationError
from tests.archipelago.conftest import DRAFTED, FACTS, FILES, LOCKED, OUTLINE, brief, entries, export_bytes, import_bytes, target_size
from tests.rendering.samples import CHATS, EMAILS, EVENTS, ROOT

SIDECAR = ".apps_data/taskwright/world.json"


def _without(data: bytes, *names: str, replace: dict | None = None) -> bytes:
    """The same zip without some entries (or with some replaced)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in names:
                target.writestr(info, (replace or {}).get(info.filename, source.read(info)))
    return out.getvalue()


def test_export_import_export_gives_the_same_bytes_for_every_file(full_world, team):
    first = export_bytes(full_world, team.author)
    imported = import_bytes(first, team.project, team.author)
    second = export_bytes(imported, team.author)

    before, after = entries(first), entries(second)
    assert sorted(before) == sorted(after)
    for name in before:
        assert after[name] == before[name], name
    assert second == first  # the zip itself too: same order, timestamps and modes
    files = [n for n in before if n.startswith("filesystem/") and not n.endswith("/")]
    assert len(files) == len(FILES)
    assert {".apps_data/mail/sent.mbox", ".apps_data/calendar/calendar.ics"} <= set(before)


def _status(path: str) -> str:
    return "locked" if path in LOCKED else "drafted" if path in DRAFTED else "edited"


def test_the_imported_world_holds_the_same_documents(full_world, team):
    imported = import_bytes(export_bytes(full_world, team.author), team.project, team.author)
    assert imported.pk != full_world.pk and imported.title == "Project Falcon"
    docs = {d.path: d for d in imported.documents.all()}
    for path, fmt, content, metadata in FILES:
        doc = docs[path if "." in path.rsplit("/", 1)[-1] else f"{path}.{fmt}"]  # Deal/LOI came back as Deal/LOI.docx
        assert (doc.kind, doc.format, doc.content, doc.metadata, doc.status) == ("file", fmt, content, metadata, _status(path))
        assert not doc.source_file  # our own render, restored from its source text: no original to keep
    reply, second_reply, root = docs["Mail/02 Re LOI.eml"], docs["Mail/03 Re Re LOI.eml"], docs[ROOT]
    assert reply.metadata["thread"] == second_reply.metadata["thread"] == ROOT and "thread" not in root.metadata
    assert root.metadata["attachments"] == "Deal/LOI.docx, Deal/Model.xlsx"  # data-room paths, as Taskwright stores them
    assert root.metadata["cc"] == '"Smith, John" <john@acme.com>' and second_reply.metadata["bcc"] == "counsel@firm.law"
    assert root.content == EMAILS[0].content and root.metadata["date"] == "2026-01-05T09:00:00+01:00"
    # Untouched mail, chat and events come back with their metadata exactly as written (dates with their own offsets).
    for item in EMAILS + CHATS + EVENTS:
        assert docs[item.path].metadata == item.metadata, item.path
        assert (docs[item.path].brief, docs[item.path].target_size, docs[item.path].status) == (
            brief(item.path), target_size(item.path), _status(item.path))
    assert docs["Chat/deal-team/002"].metadata["date"] == "2026-01-05T09:02:00+01:00"
    assert docs["Calendar/IC meeting"].metadata["attendees"] == 'Jane Doe <jane@acme.com>, "Smith, John" <john@acme.com>'
    assert docs["Calendar/IC meeting"].content == EVENTS[0].content
    assert len(docs) == len(FILES) + len(EMAILS) + len(CHATS) + len(EVENTS)
    version = docs[ROOT].versions.get()
    assert version.source == "uploaded" and version.note.startswith("Imported from world.zip")


def test_the_worlds_own_content_travels_with_it(full_world, team):
    """Outline, facts sheet and every document's brief, target size and status are in
    world.json, and an import restores them: a locked document stays locked."""
    sidecar = json.loads(entries(export_bytes(full_world, team.author))[SIDECAR])
    assert sidecar["taskwright_world"] == 2 and sidecar["outline"] == OUTLINE and sidecar["facts"] == FACTS
    memo = sidecar["files"]["Deal/Memo.docx"]
    assert (memo["kind"], memo["brief"], memo["target_size"], memo["status"], memo["metadata"]) == (
        "file", brief("Deal/Memo.docx"), target_size("Deal/Memo.docx"), "locked", {"author": "Jane Doe"})
    assert {entry["path"] for entry in sidecar["mail"].values()} == {e.path for e in EMAILS}
    assert all(entry["kind"] == "chat" and entry["brief"] == brief(entry["path"]) for entry in sidecar["chat"].values())
    imported = import_bytes(export_bytes(full_world, team.author), team.project, team.author)
    assert (imported.outline, imported.facts) == (OUTLINE, FACTS)
    docs = {d.path: d for d in imported.documents.all()}
    originals = {f"{d.path}.{d.format}" if d.kind == "file" and "." not in d.path.rsplit("/", 1)[-1] else d.path: d
                 for d in full_world.documents.all()}
    assert set(docs) == set(originals)
    for path, doc in docs.items():
        original = originals[path]
        assert (doc.brief, doc.target_size, doc.status) == (original.brief, original.target_size, original.status), path
    assert {p for p, d in docs.items() if d.status == "locked"} == LOCKED
    assert docs["Deal/LOI.docx"].status == "edited" and docs["Deal/Board deck.pptx"].status == "drafted"


def test_a_world_json_of_version_1_is_still_read(full_world, team):
    """Version 1 had no outline, facts or notes, kept only 'author' of a file's metadata,
    and mapped ids to paths."""
    data = export_bytes(full_world, team.author)
    sidecar = json.loads(entries(data)[SIDECAR])
    old = {
        "taskwright_world": 1, "title": sidecar["title"],
        "files": {target: {"format": e["format"], "sha256": e["sha256"], "content": e["content"],
                           "metadata": {k: v for k, v in e["metadata"].items() if k == "author"}}
                  for target, e in sidecar["files"].items()},
        **{app: {key: e["path"] for key, e in sidecar[app].items()} for app in ("mail", "chat", "calendar")},
    }
    imported = import_bytes(_without(data, replace={SIDECAR: json.dumps(old).encode()}), team.project, team.author)
    docs = {d.path: d for d in imported.documents.all()}
    assert imported.title == "Project Falcon" and imported.outline == "" and imported.facts == []
    assert docs["Deal/Memo.docx"].content == FILES[0][2] and docs["Deal/Memo.docx"].metadata == {"author": "Jane Doe"}
    assert docs["Mail/02 Re LOI.eml"].metadata["thread"] == ROOT and docs["Chat/deal-team/002"].metadata["thread"] == "Chat/deal-team/001"
    assert {d.status for d in docs.values()} == {"edited"} and {d.brief for d in docs.values()} == {""}


def test_without_world_json_every_app_is_read_from_its_files(full_world, team):
    foreign = _without(export_bytes(full_world, team.author), SIDECAR)
    imported = import_bytes(foreign, team.project, team.author, name="falcon.zip")
    assert imported.title == "falcon"
    docs = {d.path: d for d in imported.documents.all()}
    emails = [d for d in docs.values() if d.kind == "email"]
    assert len(emails) == 4
    root = next(d for d in emails if d.metadata["subject"] == "Project Falcon — LOI")
    replies = [d for d in emails if d.metadata["subject"] == "Re: Project Falcon — LOI"]
    assert root.path == "Mail/2026-01-05 0900 Project Falcon — LOI.eml"
    assert [r.metadata["thread"] for r in replies] == [root.path, root.path]
    chats = sorted((d for d in docs.values() if d.kind == "chat"), key=lambda d: d.path)
    assert [d.path for d in chats] == ["Chat/deal-team/001", "Chat/deal-team/002", "Chat/deal-team/003", "Chat/legal/001"]
    assert chats[1].metadata["thread"] == "Chat/deal-team/001" and "thread" not in chats[2].metadata
    events = {d.metadata["subject"]: d for d in docs.values() if d.kind == "event"}
    assert events["SPA signing"].path == "Calendar/2026-02-15 SPA signing"
    assert events["Investment Committee — Project Falcon"].metadata["start"] == "2026-01-12T14:00:00+00:00"
    # Files are extracted as uploads are, and their originals kept.
    pdf, xlsx, md = docs["Deal/Memo.pdf"], docs["Deal/Model.xlsx"], docs["Notes/readme.md"]
    assert pdf.format == "pdf" and "## Page 1" in pdf.content and "Transaction summary" in pdf.content and pdf.source_file
    assert "=SUM(B2:B3)" in xlsx.content and xlsx.source_file
    assert md.content.startswith("# Read me")
    assert docs["Notes/empty.md"].content == ""
    # One pass through Taskwright settles a foreign world: from then on, round trips are exact.
    second = export_bytes(imported, team.author)
    again = import_bytes(second, team.project, team.author)
    assert export_bytes(again, team.author) == second


def test_a_file_changed_outside_taskwright_is_read_from_its_bytes(full_world, team):
    edited = _without(export_bytes(full_world, team.author), replace={"filesystem/Notes/readme.md": b"# Read me\n\nEdited by hand.\n"})
    imported = import_bytes(edited, team.project, team.author)
    readme = imported.documents.get(path="Notes/readme.md")
    assert readme.content == "# Read me\n\nEdited by hand.\n" and readme.source_file
    assert readme.brief == brief("Notes/readme.md") and readme.status == "edited"  # its notes still describe it
    memo = imported.documents.get(path="Deal/Memo.docx")
    assert memo.content == FILES[0][2] and memo.status == "locked"  # the untouched ones still come back exactly


def test_a_header_changed_outside_taskwright_is_taken_from_the_mbox(full_world, team):
    data = export_bytes(full_world, team.author)
    mbox = entries(data)[".apps_data/mail/sent.mbox"].replace(b"Subject: Diligence kick-off", "Subject: Diligence — day one".encode())
    imported = import_bytes(_without(data, replace={".apps_data/mail/sent.mbox": mbox}), team.project, team.author)
    edited = imported.documents.get(path="Mail/04 Diligence.eml")
    assert edited.metadata["subject"] == "Diligence — day one" and edited.brief == brief("Mail/04 Diligence.eml")
    assert imported.documents.get(path=ROOT).metadata == EMAILS[0].metadata


def test_a_world_zipped_inside_a_folder_imports(full_world, team):
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(export_bytes(full_world, team.author))) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(f"falcon/{info.filename}", source.read(info))
    imported = import_bytes(out.getvalue(), team.project, team.author)
    assert imported.documents.count() == full_world.documents.count()


def test_a_title_given_at_import_wins(full_world, team):
    imported = import_bytes(export_bytes(full_world, team.author), team.project, team.admin, title="  Falcon   copy ")
    assert imported.title == "Falcon copy" and imported.created_by == team.admin
    assert World.objects.filter(project=team.project).count() == 2
    assert Document.objects.filter(world=imported).count() == full_world.documents.count()


def test_a_frozen_snapshot_writes_the_same_zip_without_the_database(full_world, team):
    """What the pack builder calls: plain values in, the world's zip out."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from authoring.archipelago import write_world_snapshot_zip
    from authoring.services.world_transfer import world_export_archive, world_snapshot

    snapshot = json.loads(json.dumps(world_snapshot(world=full_world)))  # frozen: survives JSON, as a pack stores it
    assert set(snapshot) == {"id", "title", "outline", "facts", "documents"}
    assert set(snapshot["documents"][0]) == {"path", "kind", "format", "brief", "metadata", "target_size", "content", "status"}
    out = io.BytesIO()
    with CaptureQueriesContext(connection) as queries:
        counts = write_world_snapshot_zip(snapshot, out=out)
        with world_export_archive(snapshot=snapshot) as archive:
            from_service = archive.read()
    assert len(queries) == 0
    assert out.getvalue() == from_service == export_bytes(full_world, team.author)
    assert counts == {"files": len(FILES), "emails": len(EMAILS), "chat": len(CHATS), "events": len(EVENTS)}
    skeleton = {**snapshot, "documents": [*snapshot["documents"], {"path": "Deal/Todo.docx", "kind": "file", "format": "docx",
                                                                    "brief": "To draft", "metadata": {}, "target_size": 300,
                                                                    "content": "", "status": "skeleton"}]}
    with pytest.raises(ApplicationError, match=r"Deal/Todo\.docx: has no content yet"):
        write_world_snapshot_zip(skeleton, out=io.BytesIO())
