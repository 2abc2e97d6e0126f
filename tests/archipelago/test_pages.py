"""The Export button and the Import form, end to end through the client, and the
manage.py commands."""

import io
import re
import zipfile

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from authoring.models import World
from tests.archipelago.conftest import export_bytes


def _upload(data: bytes, name: str = "falcon.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, "application/zip")


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_export_button_downloads_the_world_as_an_attachment(client, full_world, team):
    client.force_login(team.author)
    page = client.get(reverse("world-editor", args=[full_world.pk]))
    assert reverse("world-export", args=[full_world.pk]).encode() in page.content
    response = client.get(reverse("world-export", args=[full_world.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="project-falcon-{full_world.pk}.zip"'
    assert response["X-Content-Type-Options"] == "nosniff" and "sandbox" in response["Content-Security-Policy"]
    data = b"".join(response.streaming_content)
    assert data == export_bytes(full_world, team.author)
    assert "filesystem/Deal/Memo.docx" in zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_a_reviewer_sees_no_export_button_and_gets_no_zip(client, full_world, team):
    client.force_login(team.reviewer)
    assert reverse("world-export", args=[full_world.pk]).encode() not in client.get(reverse("world-editor", args=[full_world.pk])).content
    response = client.get(reverse("world-export", args=[full_world.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[full_world.pk])
    assert _messages(response) == ["Your role in this project (reviewer) cannot export worlds; authors and admins can."]


def test_an_export_that_fails_says_which_document_on_the_world_page(client, full_world, team):
    from authoring import services

    services.document_create(world=full_world, user=team.author, path="Deal/Todo.docx")
    client.force_login(team.author)
    response = client.get(reverse("world-export", args=[full_world.pk]), follow=True)
    assert response.redirect_chain == [(reverse("world-editor", args=[full_world.pk]), 302)]
    assert "Deal/Todo.docx: has no content yet" in response.content.decode()
    # The button is a plain link, not <a download>: a browser told to download would save this
    # redirected page as a file and never show the reason (the zip itself is an attachment).
    button = re.search(r'<a [^>]*id="world-export"[^>]*>', response.content.decode()).group(0)
    assert " download" not in button


def test_the_import_form_creates_a_world_and_opens_it(client, full_world, team):
    data = export_bytes(full_world, team.author)
    client.force_login(team.author2)
    page = client.get(reverse("project-detail", args=[team.project.pk]))
    assert b'id="world-import"' in page.content and b'enctype="multipart/form-data"' in page.content
    response = client.post(reverse("world-import", args=[team.project.pk]), {"archive": _upload(data), "title": "Falcon (copy)"})
    world = World.objects.get(title="Falcon (copy)")
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[world.pk])
    assert world.project == team.project and world.created_by == team.author2
    assert world.documents.count() == full_world.documents.count()
    assert _messages(response) == [f"Imported 'Falcon (copy)' with {world.documents.count()} documents."]


def test_a_bad_zip_on_the_import_form_is_explained_and_creates_nothing(client, team):
    client.force_login(team.author)
    response = client.post(reverse("world-import", args=[team.project.pk]), {"archive": _upload(b"not a zip")}, follow=True)
    assert response.redirect_chain == [(reverse("project-detail", args=[team.project.pk]), 302)]
    assert "This is not a valid zip archive" in response.content.decode()
    missing = client.post(reverse("world-import", args=[team.project.pk]), {})
    assert _messages(missing) == ["Choose a world zip to import."]
    assert World.objects.count() == 0


def test_a_reviewer_cannot_import(client, full_world, team):
    data = export_bytes(full_world, team.author)
    client.force_login(team.reviewer)
    assert b'id="world-import"' not in client.get(reverse("project-detail", args=[team.project.pk])).content
    response = client.post(reverse("world-import", args=[team.project.pk]), {"archive": _upload(data)})
    assert response.status_code == 302 and response["Location"] == reverse("project-detail", args=[team.project.pk])
    assert _messages(response) == ["Your role in this project (reviewer) cannot import worlds; authors and admins can."]
    assert World.objects.count() == 1


def test_outsiders_get_404_and_anonymous_visitors_sign_in(client, full_world, team, other_team):
    data = export_bytes(full_world, team.author)
    for user in (other_team.author, other_team.admin):
        client.force_login(user)
        assert client.get(reverse("world-export", args=[full_world.pk])).status_code == 404
        assert client.post(reverse("world-import", args=[team.project.pk]), {"archive": _upload(data)}).status_code == 404
    client.logout()
    for response in (client.get(reverse("world-export", args=[full_world.pk])),
                     client.post(reverse("world-import", args=[team.project.pk]), {"archive": _upload(data)})):
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert World.objects.count() == 1
    client.force_login(team.author)
    assert client.post(reverse("world-export", args=[full_world.pk])).status_code == 405


def test_the_manage_py_commands_export_and_import(full_world, team, tmp_path):
    out = tmp_path / "falcon.zip"
    call_command("export_world", str(full_world.pk), str(out))
    assert out.read_bytes() == export_bytes(full_world, team.author)
    stdout = io.StringIO()
    call_command("import_world", str(team.project.pk), str(out), user=team.author.username, stdout=stdout)
    imported = World.objects.exclude(pk=full_world.pk).get()
    assert f"Imported world {imported.pk} (Project Falcon)" in stdout.getvalue()
    with pytest.raises(CommandError, match="cannot import worlds"):
        call_command("import_world", str(team.project.pk), str(out), user=team.reviewer.username)
    with pytest.raises(CommandError, match="not a member"):
        call_command("import_world", str(team.project.pk + 1000), str(out), user=team.author.username)
    with pytest.raises(CommandError, match="There is no world"):
        call_command("export_world", "999999", str(out))
