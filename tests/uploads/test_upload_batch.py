"""One upload service for the page and the API: all or nothing, the stored originals of a
refused batch removed, one limit on the number of files, answered in each one's language."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring.models import Document
from tests.uploads import builders
from tests.uploads.test_upload_service import media, stored_files  # noqa: F401 -- the fixture


def _files(n: int) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(f"note {i}.md", f"# Note {i}\n".encode(), "text/markdown") for i in range(n)]


def test_the_page_adds_nothing_when_one_file_is_refused_and_removes_what_it_stored(client, team, world, media):  # noqa: F811
    client.force_login(team.author)
    before = Document.objects.filter(world=world).count()
    good = SimpleUploadedFile("SPA.docx", builders.docx_bytes())
    bad = SimpleUploadedFile("setup.exe", builders.exe_bytes())
    response = client.post(reverse("world-upload", args=[world.pk]), {"files": [good, bad]}, follow=True)
    page = response.content.decode()
    assert "1 of 2 files were refused, so none was added" in page and "setup.exe" in page
    assert Document.objects.filter(world=world).count() == before
    assert stored_files(media) == []  # the docx's original, stored before the refusal, is gone again


def test_the_page_says_how_many_files_it_takes(client, team, world, media, settings):  # noqa: F811
    client.force_login(team.author)
    response = client.post(reverse("world-upload", args=[world.pk]), {"files": _files(settings.DATA_UPLOAD_MAX_NUMBER_FILES + 1)},
                           follow=True)
    assert response.status_code == 200
    assert f"Upload at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files at a time." in response.content.decode()
    ok = client.post(reverse("world-upload", args=[world.pk]), {"files": _files(2)}, follow=True)
    assert "Added 2 documents" in ok.content.decode()


def test_the_api_answers_json_for_too_many_files(team, world, media, settings):  # noqa: F811
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=team.author).key}")
    response = api.post(
        f"/api/worlds/{world.pk}/uploads/", {"files": _files(settings.DATA_UPLOAD_MAX_NUMBER_FILES + 1)}, format="multipart"
    )
    assert response.status_code == 400 and response["Content-Type"].startswith("application/json")
    assert response.json() == {"detail": f"Send at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files in one request."}
    assert not Document.objects.filter(world=world, path__startswith="Uploads/").exists()
