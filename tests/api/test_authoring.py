"""Worlds, documents, tasks and rubrics through the API: each endpoint's happy path
checked in the response and the database, role rules, stale edits, oversize input."""

from authoring.models import Criterion, Document, DocumentStatus, EnvTask, EnvTaskStatus, RubricVersion, World
from reviews.services import review_decide, submission_claim_next, submission_create
from tests import factories

# --- Worlds ----------------------------------------------------------------------------


def test_world_create_list_get_and_patch(team, other_team, api_for):
    client = api_for(team.author)
    created = client.post(
        "/api/worlds/",
        {"project": team.project.pk, "title": "  Deal room  ", "outline": "## Scenario\n", "facts": [{"key": "Price", "value": "$3m"}]},
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    world = World.objects.get(pk=body["id"])
    assert (world.title, world.outline, world.facts, world.created_by) == (
        "Deal room",
        "## Scenario\n",
        [{"key": "Price", "value": "$3m"}],
        team.author,
    )
    assert body["revision"] == 1 and body["created_by"] == team.author.username and body["project"] == team.project.pk

    factories.world(other_team.project, other_team.author, title="Their world")
    listed = client.get("/api/worlds/")
    assert [w["title"] for w in listed.json()["results"]] == ["Deal room"]
    assert client.get(f"/api/worlds/?project={team.project.pk}").json()["count"] == 1
    assert client.get(f"/api/worlds/?project={other_team.project.pk}").json()["count"] == 0

    detail = client.get(f"/api/worlds/{world.pk}/")
    assert detail.status_code == 200 and detail.json()["facts"] == [{"key": "Price", "value": "$3m"}]

    patched = client.patch(f"/api/worlds/{world.pk}/", {"revision": 1, "outline": "New outline"}, format="json")
    assert patched.status_code == 200, patched.json()
    world.refresh_from_db()
    assert (world.title, world.outline, world.revision) == ("Deal room", "New outline", 2)
    assert world.facts == [{"key": "Price", "value": "$3m"}]  # untouched: not sent
    assert patched.json()["revision"] == 2


def test_world_patch_requires_a_revision(world, team, api_for):
    response = api_for(team.author).patch(f"/api/worlds/{world.pk}/", {"title": "No revision"}, format="json")
    assert response.status_code == 400
    assert "revision" in response.json()
    world.refresh_from_db()
    assert world.title != "No revision"


def test_stale_world_patch_is_a_409_and_changes_nothing(world, team, api_for):
    author, author2 = api_for(team.author), api_for(team.author2)
    first = author2.patch(f"/api/worlds/{world.pk}/", {"revision": 1, "title": "Theirs"}, format="json")
    assert first.status_code == 200

    stale = author.patch(f"/api/worlds/{world.pk}/", {"revision": 1, "title": "Mine"}, format="json")
    assert stale.status_code == 409
    body = stale.json()
    assert body["current_revision"] == 2
    assert body["changes"]["title"]["saved"] == "Theirs"
    assert team.author2.username in body["detail"]
    world.refresh_from_db()
    assert (world.title, world.revision) == ("Theirs", 2)


def test_world_rules_come_from_the_services(world, team, api_for):
    reviewer = api_for(team.reviewer)
    response = reviewer.patch(f"/api/worlds/{world.pk}/", {"revision": 1, "title": "Reviewer edit"}, format="json")
    assert response.status_code == 403
    assert "cannot edit content" in response.json()["detail"]
    created = reviewer.post("/api/worlds/", {"project": team.project.pk, "title": "Reviewer world"}, format="json")
    assert created.status_code == 403
    assert not World.objects.filter(title="Reviewer world").exists()

    author = api_for(team.author)
    assert author.post("/api/worlds/", {"project": team.project.pk, "title": "  "}, format="json").json() == {
        "detail": "A world needs a title."
    }
    too_long = author.post("/api/worlds/", {"project": team.project.pk, "title": "T", "outline": "x" * 200_001}, format="json")
    assert too_long.status_code == 400 and "too long" in too_long.json()["detail"]
    bad_fact = author.post("/api/worlds/", {"project": team.project.pk, "title": "T", "facts": [{"key": "", "value": "v"}]}, format="json")
    assert bad_fact.status_code == 400 and "no key" in bad_fact.json()["detail"]
    world.refresh_from_db()
    assert world.revision == 1
    assert World.objects.filter(project=team.project).count() == 1


# --- Documents -------------------------------------------------------------------------

def test_document_create_list_get_patch_delete(world, team, api_for):
    client = api_for(team.author)
    created = client.post(
        f"/api/worlds/{world.pk}/documents/",
        {
            "path": "Mail/Offer",
            "kind": "email",
            "brief": "The offer",
            "metadata": {"from": "a@x.test", "subject": "Offer"},
            "content": "Dear Beta,",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    document = Document.objects.get(pk=created.json()["id"])
    assert (document.world, document.kind, document.metadata["subject"], document.content, document.status) == (
        world, "email", "Offer", "Dear Beta,", DocumentStatus.EDITED
    )

    listed = client.get(f"/api/worlds/{world.pk}/documents/")
    assert listed.status_code == 200
    rows = listed.json()["results"]
    assert [d["path"] for d in rows] == ["Deal/Doc 1.md", "Deal/Doc 2.md", "Mail/Offer"]
    assert "content" not in rows[0]

    detail = client.get(f"/api/documents/{document.pk}/")
    assert detail.json()["content"] == "Dear Beta,"

    locked = client.patch(f"/api/documents/{document.pk}/", {"revision": 1, "content": "Dear Beta Ltd,", "locked": True}, format="json")
    assert locked.status_code == 200, locked.json()
    document.refresh_from_db()
    assert (document.content, document.status, document.revision) == ("Dear Beta Ltd,", DocumentStatus.LOCKED, 2)

    refused = client.delete(f"/api/documents/{document.pk}/")
    assert refused.status_code == 400 and "locked" in refused.json()["detail"]
    assert client.patch(f"/api/documents/{document.pk}/", {"revision": 2, "locked": False}, format="json").status_code == 200
    deleted = client.delete(f"/api/documents/{document.pk}/")
    assert deleted.status_code == 204
    assert not Document.objects.filter(pk=document.pk).exists()


def test_document_stale_patch_and_oversize_content(world, team, api_for):
    document = world.documents.first()
    client = api_for(team.author)
    assert client.patch(f"/api/documents/{document.pk}/", {"revision": 1, "content": "first"}, format="json").status_code == 200
    stale = client.patch(f"/api/documents/{document.pk}/", {"revision": 1, "content": "second"}, format="json")
    assert stale.status_code == 409
    assert stale.json()["changes"]["content"]["saved"] == "first"
    huge = client.patch(f"/api/documents/{document.pk}/", {"revision": 2, "content": "x" * 500_001}, format="json")
    assert huge.status_code == 400 and "too long" in huge.json()["detail"]
    bad_path = client.post(f"/api/worlds/{world.pk}/documents/", {"path": "../etc/passwd.md"}, format="json")
    assert bad_path.status_code == 400 and "not a valid data-room path" in bad_path.json()["detail"]
    document.refresh_from_db()
    assert (document.content, document.revision) == ("first", 2)


def test_reviewer_cannot_change_documents(world, team, api_for):
    document = world.documents.first()
    reviewer = api_for(team.reviewer)
    assert reviewer.get(f"/api/documents/{document.pk}/").status_code == 200  # reading is fine
    patch = reviewer.patch(f"/api/documents/{document.pk}/", {"revision": 1, "content": "Reviewer text"}, format="json")
    assert patch.status_code == 403
    assert reviewer.delete(f"/api/documents/{document.pk}/").status_code == 403
    assert reviewer.post(f"/api/worlds/{world.pk}/documents/", {"path": "R/x.md"}, format="json").status_code == 403
    document.refresh_from_db()
    assert document.content == "" and document.revision == 1
    assert world.documents.count() == 2


# --- Tasks -----------------------------------------------------------------------------

def test_task_create_list_get_patch(world, team, other_team, api_for):
    client = api_for(team.author)
    created = client.post(
        "/api/tasks/", {"world": world.pk, "title": "Price", "prompt": "What is the price?", "deliverable_kind": "answer"}, format="json"
    )
    assert created.status_code == 201, created.json()
    env_task = EnvTask.objects.get(pk=created.json()["id"])
    assert (env_task.world, env_task.project, env_task.prompt, env_task.status) == (
        world,
        team.project,
        "What is the price?",
        EnvTaskStatus.DRAFT,
    )
    assert env_task.rubric_versions.count() == 1

    factories.env_task(factories.world(other_team.project, other_team.author), other_team.author, title="Theirs")
    listed = client.get("/api/tasks/").json()
    assert [t["title"] for t in listed["results"]] == ["Price"]
    assert "prompt" not in listed["results"][0]
    assert client.get("/api/tasks/?status=draft").json()["count"] == 1
    assert client.get("/api/tasks/?status=approved").json()["count"] == 0
    assert client.get(f"/api/tasks/?project={team.project.pk}&status=draft").json()["count"] == 1

    detail = client.get(f"/api/tasks/{env_task.pk}/").json()
    assert detail["prompt"] == "What is the price?" and detail["revision"] == 1

    patched = client.patch(
        f"/api/tasks/{env_task.pk}/", {"revision": 1, "reference_answer": "$12m", "deliverable_kind": "docx"}, format="json"
    )
    assert patched.status_code == 200, patched.json()
    env_task.refresh_from_db()
    assert (env_task.reference_answer, env_task.deliverable_kind, env_task.title, env_task.revision) == ("$12m", "docx", "Price", 2)


def test_task_stale_patch_is_a_409_and_db_unchanged(env_task, team, api_for):
    client = api_for(team.author)
    assert client.patch(f"/api/tasks/{env_task.pk}/", {"revision": env_task.revision, "prompt": "Newer"}, format="json").status_code == 200
    stale = client.patch(f"/api/tasks/{env_task.pk}/", {"revision": env_task.revision, "prompt": "Older base"}, format="json")
    assert stale.status_code == 409
    env_task.refresh_from_db()
    assert env_task.prompt == "Newer"


def test_reviewer_cannot_patch_a_task_or_its_rubric(env_task, team, api_for):
    reviewer = api_for(team.reviewer)
    response = reviewer.patch(f"/api/tasks/{env_task.pk}/", {"revision": env_task.revision, "prompt": "Reviewer prompt"}, format="json")
    assert response.status_code == 403
    assert "cannot edit content" in response.json()["detail"]
    rubric = env_task.rubric_versions.get()
    criterion = rubric.criteria.first()
    assert reviewer.patch(f"/api/criteria/{criterion.pk}/", {"revision": rubric.revision, "points": 50}, format="json").status_code == 403
    assert (
        reviewer.post(f"/api/tasks/{env_task.pk}/rubric/criteria/", {"revision": rubric.revision, "text": "R"}, format="json").status_code
        == 403
    )
    assert reviewer.delete(f"/api/criteria/{criterion.pk}/", {"revision": rubric.revision}, format="json").status_code == 403
    assert reviewer.post("/api/tasks/", {"world": env_task.world_id, "title": "Reviewer task"}, format="json").status_code == 403
    env_task.refresh_from_db()
    criterion.refresh_from_db()
    assert env_task.prompt != "Reviewer prompt" and criterion.points == 5
    assert rubric.criteria.count() == 2
    assert not EnvTask.objects.filter(title="Reviewer task").exists()


def test_task_in_review_cannot_be_edited(env_task, team, api_for):
    submission_create(env_task=env_task, user=team.author)
    env_task.refresh_from_db()
    response = api_for(team.author).patch(f"/api/tasks/{env_task.pk}/", {"revision": env_task.revision, "title": "Sneaky"}, format="json")
    assert response.status_code == 400 and "in review" in response.json()["detail"]
    env_task.refresh_from_db()
    assert env_task.title != "Sneaky"


# --- Rubric ----------------------------------------------------------------------------

def test_rubric_and_criteria_endpoints(env_task, team, api_for):
    client = api_for(team.author)
    rubric = client.get(f"/api/tasks/{env_task.pk}/rubric/").json()
    assert rubric["number"] == 1 and rubric["frozen"] is False and rubric["total_positive_points"] == 5 + 4
    assert [c["text"] for c in rubric["criteria"]] == ["States fact 1", "States fact 2"]

    added = client.post(
        f"/api/tasks/{env_task.pk}/rubric/criteria/",
        {"revision": rubric["revision"], "text": "Invents a number", "points": -3, "tag": "pitfall"},
        format="json",
    )
    assert added.status_code == 201, added.json()
    body = added.json()
    criterion = Criterion.objects.get(pk=body["criterion"]["id"])
    assert (criterion.text, criterion.points, criterion.tag) == ("Invents a number", -3, "pitfall")
    assert body["rubric"]["revision"] == rubric["revision"] + 1
    assert body["rubric"]["total_positive_points"] == 9 and body["rubric"]["total_penalty_points"] == -3

    first = rubric["criteria"][0]
    patched = client.patch(f"/api/criteria/{first['id']}/", {"revision": body["rubric"]["revision"], "points": 7}, format="json")
    assert patched.status_code == 200, patched.json()
    first_row = Criterion.objects.get(pk=first["id"])
    assert (first_row.points, first_row.text, first_row.grader_kind) == (7, "States fact 1", "llm_judge")
    revision = patched.json()["rubric"]["revision"]

    stale = client.delete(f"/api/criteria/{criterion.pk}/", {"revision": revision - 1}, format="json")
    assert stale.status_code == 409
    assert Criterion.objects.filter(pk=criterion.pk).exists()
    deleted = client.delete(f"/api/criteria/{criterion.pk}/", {"revision": revision}, format="json")
    assert deleted.status_code == 200
    assert not Criterion.objects.filter(pk=criterion.pk).exists()
    assert [c["text"] for c in deleted.json()["rubric"]["criteria"]] == ["States fact 1", "States fact 2"]

    bad = client.post(
        f"/api/tasks/{env_task.pk}/rubric/criteria/",
        {"revision": deleted.json()["rubric"]["revision"], "text": "Bad", "points": 0},
        format="json",
    )
    assert bad.status_code == 400 and "not zero" in bad.json()["detail"]


def test_editing_a_frozen_rubric_starts_a_new_version(env_task, team, api_for):
    rubric = env_task.rubric_versions.get()
    submission_create(env_task=env_task, user=team.author)
    review_decide(
        submission=submission_claim_next(user=team.reviewer), user=team.reviewer, decision="request_changes", comment="Sharpen fact 2.",
        checklist=factories.checklist(team.project.pk),
    )
    client = api_for(team.author)
    current = client.get(f"/api/tasks/{env_task.pk}/rubric/").json()
    assert current["frozen"] is True and current["number"] == 1

    old_criterion = rubric.criteria.order_by("position").last()
    patched = client.patch(
        f"/api/criteria/{old_criterion.pk}/", {"revision": current["revision"], "text": "States fact 2 exactly"}, format="json"
    )
    assert patched.status_code == 200, patched.json()
    body = patched.json()
    assert body["rubric"]["number"] == 2 and body["rubric"]["frozen"] is False
    assert body["criterion"]["id"] != old_criterion.pk
    old_criterion.refresh_from_db()
    assert old_criterion.text == "States fact 2"  # the frozen version never changes
    assert RubricVersion.objects.get(env_task=env_task, number=2).criteria.filter(text="States fact 2 exactly").exists()


def test_an_edit_refuses_fields_it_does_not_change(world, team, api_for):
    """A field the edit does not change (`status`, a misspelt `facts_sheet`) is a 400 naming it,
    not a 200 that changed nothing and bumped the revision. (A revision ahead of the current
    one stays a 409: a rubric's settings edit starts a new version, whose revisions count
    again from 1, so a higher number can be a stale one.)"""
    author = api_for(team.author)
    for body in ({"revision": 1, "status": "approved"}, {"revision": 1, "facts_sheet": "notalist", "title": "Renamed"}):
        response = author.patch(f"/api/worlds/{world.pk}/", body, format="json")
        unknown = next(key for key in body if key not in ("revision", "title"))
        assert response.status_code == 400 and unknown in response.json(), response.json()
        assert response.json()[unknown][0].startswith("Not something this edit changes (it changes: ")
    world.refresh_from_db()
    assert (world.revision, world.title) == (1, world.title) and world.title != "Renamed"
