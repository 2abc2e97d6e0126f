"""Bad world zips: refused with a message saying why, before anything is read, and
nothing is left behind (no world, no document, no stored file)."""

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from django.http import Http404

from authoring.models import Document, World
from core.exceptions import ApplicationError
from tests.archipelago.conftest import export_bytes, import_bytes

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _zip(*members: tuple[str, bytes], attr: dict | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (attr or {}).get(name, 0o100644 << 16)
            archive.writestr(info, data)
    return out.getvalue()


OK = ("filesystem/Notes/a.md", b"# A\n")
HOSTILE = {
    "not a zip": (b"This is plain text, not a zip.", "not a valid zip archive"),
    "traversal": (_zip(OK, ("filesystem/../../etc/cron.d/evil", b"x")), "points outside the archive"),
    "absolute path": (_zip(OK, ("/etc/passwd", b"root")), "absolute path"),
    "symlink": (_zip(OK, ("filesystem/link", b"/etc/passwd"), attr={"filesystem/link": (stat.S_IFLNK | 0o777) << 16}), "symbolic link"),
    "zip bomb": (_zip(OK, ("filesystem/zeros.csv", b"0" * (8 * 1024 * 1024))), "zip bomb"),
    "too many entries": (_zip(*[(f"filesystem/n/{i}.md", b"") for i in range(10_001)]), "entries"),
    "no world layout": (_zip(("report.docx", b"x"), ("notes.md", b"y")), "not a world in the APEX-Agents layout"),
    "unreadable files": (_zip(OK, ("filesystem/logo.png", PNG), ("filesystem/page.html", b"<html><script>x</script>")),
                         "2 files cannot be read (filesystem/logo.png: This file's content is image/png"),
    "damaged notes": (_zip(OK, (".apps_data/taskwright/world.json", b"{not json")), "world.json in this zip is damaged"),
    "bad calendar": (_zip(OK, (".apps_data/calendar/calendar.ics", b"BEGIN:VCALENDAR\nBEGIN:VEVENT\n")),
                     "calendar.ics is not valid iCalendar"),
    "bad chat": (_zip(OK, (".apps_data/chat/Groups/Space A/messages.json", b"[1, ")), "messages.json is not valid JSON"),
    "bad path in notes": (_zip(OK, (".apps_data/mail/sent.mbox",
                                    b"From a Thu Jan  1 00:00:00 2026\nMessage-ID: <m@x>\nFrom: a@x.test\n\nHi\n"),
                                   (".apps_data/taskwright/world.json",
                                    json.dumps({"taskwright_world": 1, "mail": {"<m@x>": "../../outside"}}).encode())),
                          "not a valid data-room path"),
}


def _stored_files(media: Path) -> list[Path]:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_bad_world_zip_is_refused_and_leaves_nothing(team, media, case):
    data, message = HOSTILE[case]
    worlds, documents = World.objects.count(), Document.objects.count()
    with pytest.raises(ApplicationError) as refused:
        import_bytes(data, team.project, team.author)
    assert message in refused.value.message
    assert (World.objects.count(), Document.objects.count()) == (worlds, documents)
    assert _stored_files(Path(media)) == []


def test_a_refusal_after_originals_were_stored_removes_them(team, media):
    """The originals of extracted files are stored before the transaction: a failure in
    it (here, two entries that are one path once trimmed) removes them again."""
    data = _zip(("filesystem/b.md", b"# B\n"), ("filesystem/ b.md ", b"# B again\n"))
    with pytest.raises(ApplicationError, match="same path"):
        import_bytes(data, team.project, team.author)
    assert World.objects.count() == 0 and _stored_files(Path(media)) == []


def test_reviewers_cannot_import_and_outsiders_see_nothing(full_world, team, other_team, media):
    data = export_bytes(full_world, team.author)
    with pytest.raises(ApplicationError, match=r"\(reviewer\) cannot import worlds"):
        import_bytes(data, team.project, team.reviewer)
    with pytest.raises(Http404):
        import_bytes(data, team.project, other_team.admin)
    assert World.objects.count() == 1


def test_reviewers_cannot_export_and_outsiders_see_nothing(full_world, team, other_team):
    from authoring.services.world_transfer import world_export

    with pytest.raises(ApplicationError, match=r"\(reviewer\) cannot export worlds"):
        world_export(world=full_world, user=team.reviewer)
    with pytest.raises(Http404):
        world_export(world=full_world, user=other_team.author)
    export_bytes(full_world, team.admin)  # admins may


def test_a_world_that_does_not_render_is_not_exported_and_every_problem_is_named(full_world, team):
    from authoring import services

    services.document_create(world=full_world, user=team.author, path="Deal/Outline.docx")  # a skeleton
    services.document_create(
        world=full_world, user=team.author, path="Deal/Bad.xlsx", content="## Sheet: S\n| | A |\n|---|---|\n| 1 | =NOPE( |\n"
    )
    services.document_create(world=full_world, user=team.author, path="Mail/Undated", kind="email", content="Hi",
                             metadata={"from": "a@x.test", "to": "b@x.test"})
    with pytest.raises(ApplicationError) as refused:
        export_bytes(full_world, team.author)
    message = refused.value.message
    assert message.startswith("The world cannot be exported until 3 problems are fixed")
    assert (
        "Deal/Outline.docx: has no content yet" in message and "Deal/Bad.xlsx: " in message and "Mail/Undated: metadata 'date'" in message
    )


def test_two_documents_exported_to_one_name_are_refused(team, media):
    from authoring import services
    from tests.archipelago.conftest import export_bytes as export

    world = services.world_create(project_id=team.project.pk, user=team.author, title="Clash")
    services.document_create(world=world, user=team.author, path="Deal/LOI", format="docx", content="# LOI\n")
    services.document_create(world=world, user=team.author, path="Deal/LOI.docx", content="# LOI\n")
    with pytest.raises(ApplicationError) as refused:
        export(world, team.author)
    assert "Deal/LOI.docx: would be exported as filesystem/Deal/LOI.docx, like Deal/LOI; rename one of them" in refused.value.message


def test_a_path_that_would_leave_the_zip_folder_is_never_written(team):
    """Services refuse such paths; the export checks again (defence in depth: the zip is
    read by other people's tools)."""
    from authoring.archipelago import ExportDocument, write_world_zip

    for path in ("../outside.md", "/etc/passwd.md", "Deal//x.md", "a\\..\\b.md"):
        with pytest.raises(ApplicationError, match="is not a safe path inside the zip"):
            write_world_zip([ExportDocument(path=path, kind="file", format="md", content="x")], title="t", out=io.BytesIO())


@pytest.mark.parametrize(("kind", "metadata", "message"), [
    ("chat", {"group_id": "../../etc"}, "metadata 'group_id': '../../etc' cannot be a folder name"),
    ("chat", {"user_id": "a/b"}, "metadata 'user_id': 'a/b' cannot be a folder name"),
    ("chat", {"message_id": "only-one-part"}, "is not a chat message id"),
    ("email", {"message_id": "no brackets"}, "is not a Message-ID"),
    ("event", {"tzid": "Nowhere/Else"}, "is not a time zone name"),
])
def test_kept_ids_are_checked_before_they_are_stored(team, kind, metadata, message):
    """group_id and user_id become folder names of a world zip: refused when they could leave their folder."""
    from authoring import services

    world = services.world_create(project_id=team.project.pk, user=team.author, title="Ids")
    with pytest.raises(ApplicationError, match=message):
        services.document_create(world=world, user=team.author, path="x", kind=kind, content="x", metadata=metadata)
    assert world.documents.count() == 0
