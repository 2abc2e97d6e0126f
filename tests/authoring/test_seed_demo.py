import json
from io import StringIO

from django.core.management import call_command
from django.urls import reverse

from accounts.models import Membership, Project, User
from authoring.models import Document, EnvTask, World
from llm.models import ModelEndpoint


def counts() -> tuple:
    return tuple(m.objects.count() for m in (User, Project, Membership, World, Document, EnvTask, ModelEndpoint))


def test_seed_demo_is_idempotent_and_its_printed_logins_work(db, settings, tmp_path, client):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("seed_demo", stdout=out)
    first = counts()
    call_command("seed_demo", stdout=StringIO())
    assert counts() == first
    logins = {row["username"]: row["password"] for row in json.loads((tmp_path / "demo_logins.json").read_text())}
    assert set(logins) == {"demo-author", "demo-reviewer", "demo-admin"}
    assert logins["demo-author"] in out.getvalue()  # printed, and the same as stored
    assert (tmp_path / "demo_logins.json").stat().st_mode & 0o777 == 0o600
    response = client.post(reverse("login"), {"username": "demo-reviewer", "password": logins["demo-reviewer"]})
    assert response.status_code == 302
    endpoint = ModelEndpoint.objects.get()
    assert endpoint.is_scripted and "scripted" in str(endpoint)
    project = Project.objects.get(slug="corporate-law-ma")
    assert project.name == "Corporate law — M&A" and project.env_tasks.get().rubric_versions.get().criteria.count() >= 3


def test_every_demo_document_renders_as_its_real_file(db, settings, tmp_path):
    import io

    import openpyxl

    from authoring.rendering import render_file

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    for document in Document.objects.all():
        rendered = render_file(document.kind, document.format, document.content, document.metadata, path=document.path)
        assert rendered.data, document.path
        if document.format == "xlsx":
            sheet = openpyxl.load_workbook(io.BytesIO(rendered.data), data_only=True)["Cap table"]
            assert sheet["C8"].value == 10_000_000 and sheet["D8"].value == 1
