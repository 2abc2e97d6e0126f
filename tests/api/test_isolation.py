"""A member of one project sees nothing of another: every detail endpoint answers 404
(as for an id that does not exist, never 403) and no list includes a foreign object."""

import pytest

from authoring.models import Criterion, Document, EnvTask, World
from packs.models import Pack
from packs.services import pack_build, pack_create
from reviews.models import Submission
from reviews.services import submission_create
from tests import factories
from tests.api.conftest import approved_submission


@pytest.fixture
def theirs(other_team):
    """One of everything in the other project."""
    approved = approved_submission(other_team, title="Their approved task")
    world = factories.world(other_team.project, other_team.author, title="Their world")
    env_task = factories.env_task(world, other_team.author, title="Their task")
    queued = submission_create(env_task=env_task, user=other_team.author)
    pack = pack_create(project_id=other_team.project.pk, user=other_team.admin, name="Their pack", submission_ids=[approved.pk])
    pack_build(pack_id=pack.pk)
    return {
        "project": other_team.project,
        "world": world,
        "document": world.documents.first(),
        "env_task": env_task,
        "criterion": env_task.rubric_versions.get().criteria.first(),
        "submission": queued,
        "approved": approved,
        "pack": pack,
        "membership": other_team.project.memberships.get(user=other_team.author),
    }


def _detail_requests(theirs: dict) -> list[tuple[str, str, int, dict | None]]:
    """(method, url template, their id, body): the id goes where {} is."""
    t = theirs
    return [
        ("get", "/api/projects/{}/", t["project"].pk, None),
        ("get", "/api/worlds/{}/", t["world"].pk, None),
        ("patch", "/api/worlds/{}/", t["world"].pk, {"revision": 1, "title": "Hijacked"}),
        ("get", "/api/worlds/{}/documents/", t["world"].pk, None),
        ("post", "/api/worlds/{}/documents/", t["world"].pk, {"path": "Planted/x.md"}),
        ("get", "/api/documents/{}/", t["document"].pk, None),
        ("patch", "/api/documents/{}/", t["document"].pk, {"revision": 1, "content": "Hijacked"}),
        ("delete", "/api/documents/{}/", t["document"].pk, None),
        ("get", "/api/tasks/{}/", t["env_task"].pk, None),
        ("patch", "/api/tasks/{}/", t["env_task"].pk, {"revision": 1, "title": "Hijacked"}),
        ("get", "/api/tasks/{}/rubric/", t["env_task"].pk, None),
        ("post", "/api/tasks/{}/rubric/criteria/", t["env_task"].pk, {"revision": 1, "text": "Planted"}),
        ("patch", "/api/criteria/{}/", t["criterion"].pk, {"revision": 1, "text": "Hijacked"}),
        ("delete", "/api/criteria/{}/", t["criterion"].pk, {"revision": 1}),
        ("post", "/api/tasks/{}/submit/", t["env_task"].pk, None),
        ("post", "/api/tasks/{}/new-version/", t["approved"].env_task_id, None),
        ("get", "/api/submissions/{}/", t["submission"].pk, None),
        ("post", "/api/submissions/{}/release/", t["submission"].pk, None),
        ("post", "/api/submissions/{}/decision/", t["submission"].pk, {"decision": "approve"}),
        ("get", "/api/packs/{}/", t["pack"].pk, None),
        ("get", "/api/packs/{}/download/", t["pack"].pk, None),
        ("get", "/api/projects/{}/members/", t["project"].pk, None),
        ("post", "/api/projects/{}/members/", t["project"].pk, {"identifier": "planted", "role": "admin"}),
        ("patch", "/api/members/{}/", t["membership"].pk, {"role": "admin"}),
        ("delete", "/api/members/{}/", t["membership"].pk, None),
    ]


def _send(client, method: str, url: str, body: dict | None):
    return getattr(client, method)(url, body, format="json") if body is not None else getattr(client, method)(url)


@pytest.mark.parametrize("role", ["author", "reviewer", "admin"])
def test_every_detail_endpoint_is_a_404_across_projects(team, theirs, api_for, role):
    client = api_for(getattr(team, role))
    before = {model: model.objects.count() for model in (World, Document, EnvTask, Criterion, Submission, Pack)}
    for method, template, their_id, body in _detail_requests(theirs):
        response = _send(client, method, template.format(their_id), body)
        assert response.status_code == 404, (method, template, response.status_code)
        # Exactly the answer for an id that does not exist: nothing tells them apart.
        missing = _send(client, method, template.format(999_999_999), body)
        assert (missing.status_code, missing.json()) == (404, response.json()), (method, template)
    # Creating in their project, by naming it (or its world) in the body, is a 404 too.
    t = theirs
    for url, body in [
        ("/api/worlds/", {"project": t["project"].pk, "title": "Planted"}),
        ("/api/tasks/", {"world": t["world"].pk, "title": "Planted"}),
        ("/api/packs/", {"project": t["project"].pk, "name": "Planted", "submission_ids": [t["approved"].pk]}),
    ]:
        assert client.post(url, body, format="json").status_code == 404, url
    after = {model: model.objects.count() for model in (World, Document, EnvTask, Criterion, Submission, Pack)}
    assert after == before
    world, task, document = theirs["world"], theirs["env_task"], theirs["document"]
    world.refresh_from_db()
    task.refresh_from_db()
    document.refresh_from_db()
    assert "Hijacked" not in (world.title, task.title, document.content)
    assert Submission.objects.get(pk=theirs["submission"].pk).status == "queued"
    assert EnvTask.objects.get(pk=theirs["approved"].env_task_id).status == "approved"  # no new version opened
    assert theirs["project"].memberships.get(pk=theirs["membership"].pk).role == "author"  # their members untouched


@pytest.mark.parametrize("role", ["author", "reviewer", "admin"])
def test_lists_never_include_the_other_projects_objects(team, theirs, api_for, role):
    # Our project has one of everything too, so an empty list proves nothing by itself.
    ours = approved_submission(team, title="Our approved task")
    our_pack = pack_create(project_id=team.project.pk, user=team.admin, name="Our pack", submission_ids=[ours.pk])
    queued = submission_create(
        env_task=factories.env_task(factories.world(team.project, team.author), team.author, title="Our queued"), user=team.author
    )
    client = api_for(getattr(team, role))
    their_project = theirs["project"].pk

    def ids(url: str) -> set[int]:
        response = client.get(url)
        assert response.status_code == 200, url
        return {row["id"] for row in response.json()["results"]}

    assert ids("/api/projects/") == {team.project.pk}
    assert ids("/api/worlds/") == set(World.objects.filter(project=team.project).values_list("id", flat=True))
    assert ids(f"/api/worlds/?project={their_project}") == set()
    assert ids("/api/tasks/") == set(EnvTask.objects.filter(project=team.project).values_list("id", flat=True))
    assert ids(f"/api/tasks/?project={their_project}") == set()
    assert ids("/api/submissions/") == {ours.pk, queued.pk}
    assert ids(f"/api/submissions/?project={their_project}") == set()
    assert ids("/api/review-queue/") == ({queued.pk} if role in ("reviewer", "admin") else set())
    assert ids("/api/packs/") == ({our_pack.pk} if role == "admin" else set())
    assert ids(f"/api/packs/?project={their_project}") == set()
    # Claiming never reaches into the other project's queue.
    claimed = client.post("/api/review-queue/claim-next/")
    if role == "author":
        assert claimed.status_code == 204
    else:
        assert claimed.json()["id"] == queued.pk
    assert Submission.objects.get(pk=theirs["submission"].pk).claimed_by is None
