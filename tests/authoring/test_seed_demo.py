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
