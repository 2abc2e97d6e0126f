"""Export → import → export gives the same files, and an import reads each app back."""

import io
import zipfile

from authoring.models import Document, World
from tests.archipelago.conftest import FILES, entries, export_bytes, import_bytes
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


def test_the_imported_world_holds_the_same_documents(full_world, team):
    imported = import_bytes(export_bytes(full_world, team.author), team.project, team.author)
    assert imported.pk != full_world.pk and imported.title == "Project Falcon"
    docs = {d.path: d for d in imported.documents.all()}
    for path, fmt, content, metadata in FILES:
        doc = docs[path if "." in path.rsplit("/", 1)[-1] else f"{path}.{fmt}"]  # Deal/LOI came back as Deal/LOI.docx
        assert (doc.kind, doc.format, doc.content, doc.metadata, doc.status) == ("file", fmt, content, metadata, "edited")
        assert not doc.source_file  # our own render, restored from its source text: no original to keep
    reply, second_reply, root = docs["Mail/02 Re LOI.eml"], docs["Mail/03 Re Re LOI.eml"], docs[ROOT]
    assert reply.metadata["thread"] == second_reply.metadata["thread"] == ROOT and "thread" not in root.metadata
    assert root.metadata["attachments"] == "Deal/LOI.docx, Deal/Model.xlsx"
    assert root.metadata["cc"] == '"Smith, John" <john@acme.com>' and second_reply.metadata["bcc"] == "counsel@firm.law"
    assert root.content == EMAILS[0].content and root.metadata["date"] == "2026-01-05T09:00:00+01:00"
    assert docs["Chat/deal-team/002"].metadata == {"channel": "deal-team", "from": "John Smith <john@acme.com>",
                                                   "date": "2026-01-05T08:02:00+00:00", "thread": "Chat/deal-team/001"}
    assert docs["Calendar/IC meeting"].metadata["attendees"] == 'Jane Doe <jane@acme.com>, "Smith, John" <john@acme.com>'
    assert docs["Calendar/IC meeting"].content == EVENTS[0].content
    assert len(docs) == len(FILES) + len(EMAILS) + len(CHATS) + len(EVENTS)
    version = docs[ROOT].versions.get()
    assert version.source == "uploaded" and version.note.startswith("Imported from world.zip")


def test_authoring_notes_never_leave_in_the_zip(full_world, team):
    data = b"".join(entries(export_bytes(full_world, team.author)).values())
    assert b"Secret outline" not in data and b"must not leave" not in data and b"51.2m" not in data and b"Walk-away" not in data


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
    assert imported.documents.get(path="Deal/Memo.docx").content == FILES[0][2]  # the untouched ones still come back exactly


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
