"""Every HTML route × method × role × project.

A user outside the project gets 404 for every object of it (never a hint that it
exists); an anonymous visitor is sent to sign in; inside the project each role gets
exactly what it may do, and a refused write changes nothing in the database.
"""

from dataclasses import dataclass

import pytest
from django.urls import reverse

from authoring.models import Criterion, Document, EnvTask, RubricVersion, World
from packs.models import Pack
from reviews import services as review_services
from reviews.models import Review, Submission
from tests import factories

ALLOWED, REFUSED, HIDDEN = "allowed", "refused", "hidden"


@dataclass(frozen=True)
class Route:
    name: str
    obj: str  # which fixture object's pk goes into the URL
    method: str
    data: tuple = ()
    # who may: "any" member, "author" (author/admin), "review" (reviewer/admin), "admin"
    who: str = "any"


ROUTES = [
    Route("project-detail", "project", "get"),
    Route("world-create", "project", "post", (("title", "New world"),), "author"),
    Route("world-editor", "world", "get"),
    Route("world-editor", "world", "post", (("title", "Renamed"), ("outline", "x"), ("revision", "rev:world")), "author"),
    Route("document-add", "world", "post", (("path", "new.md"), ("kind", "file"), ("target_size", "10")), "author"),
    Route("task-create", "world", "post", (("title", "New task"),), "author"),
    Route("document-editor", "document", "get"),
    Route("document-editor", "document", "post", (("path", "moved.md"), ("kind", "file"), ("target_size", "5"), ("content", "x"), ("revision", "rev:document")), "author"),
    Route("document-row", "document", "get"),
    Route("document-row", "document", "post", (("path", "renamed.md"), ("kind", "file"), ("target_size", "5"), ("revision", "rev:document")), "author"),
    Route("document-move", "document", "post", (("direction", "down"),), "author"),
    Route("document-delete", "document", "post", (), "author"),
    Route("document-preview", "document", "post", (("content", "x"),)),
    Route("task-editor", "task", "get"),
    Route("task-editor", "task", "post", (("title", "T"), ("prompt", "P"), ("deliverable_kind", "answer"), ("revision", "rev:task")), "author"),
    Route("criterion-add", "task", "post", (("text", "New"), ("points", "2"), ("tag", "important"), ("revision", "rev:rubric")), "author"),
    Route("criterion-row", "criterion", "get"),
    Route("criterion-row", "criterion", "post", (("text", "Edited"), ("points", "2"), ("tag", "important"), ("revision", "rev:rubric")), "author"),
    Route("criterion-move", "criterion", "post", (("direction", "down"), ("revision", "rev:rubric")), "author"),
    Route("criterion-delete", "criterion", "post", (("revision", "rev:rubric"),), "author"),
    Route("task-reviews", "task", "get"),
    Route("task-submit", "task2", "post", (), "author"),
    Route("submission-review", "submission", "get"),
    Route("submission-decide", "submission", "post", (("decision", "approve"),), "review"),
    Route("submission-release", "submission", "post", (), "review"),
    Route("pack-list", "project", "get", (), "admin"),
    Route("pack-list", "project", "post", (("name", "p"), ("submissions", "approved")), "admin"),
    Route("pack-progress", "pack", "get", (), "admin"),
    Route("pack-download", "pack", "get", (), "admin"),
]
ROLES = ["author", "reviewer", "admin"]
MAY = {"any": set(ROLES), "author": {"author", "admin"}, "review": {"reviewer", "admin"}, "admin": {"admin"}}


def fingerprint() -> tuple:
    """Everything a write could touch, summed up."""
    return (
        list(World.objects.values_list("pk", "revision", "title")),
        list(Document.objects.values_list("pk", "revision", "position", "path")),
        list(EnvTask.objects.values_list("pk", "revision", "status")),
        list(RubricVersion.objects.values_list("pk", "revision")),
        list(Criterion.objects.values_list("pk", "position", "text")),
        list(Submission.objects.values_list("pk", "status", "claimed_by")),
        Review.objects.count(),
        Pack.objects.count(),
    )


@pytest.fixture
def objects(team, db):
    world = factories.world(team.project, team.author)
    task = factories.env_task(world, team.author)
    task2 = factories.env_task(world, team.author, title="Second")
    approved = factories.env_task(world, team.author, title="Approved one")
    sub_approved = review_services.submission_create(env_task=approved, user=team.author)
    review_services.submission_claim_next(user=team.admin)
    review_services.review_decide(submission=sub_approved, user=team.admin, decision="approve")
    in_review = factories.env_task(world, team.author2, title="In review")
    submission = review_services.submission_create(env_task=in_review, user=team.author2)
    Submission.objects.filter(pk=submission.pk).update(status="claimed", claimed_by=None)
    pack = Pack.objects.create(project=team.project, name="p", version=1, created_by=team.admin)
    return {
        "project": team.project, "world": world, "document": world.documents.first(), "task": task, "task2": task2,
        "criterion": task.rubric_versions.get().criteria.first(), "submission": submission, "pack": pack,
        "approved": sub_approved,
    }


def request(client, route: Route, objects: dict, user=None):
    url = reverse(route.name, args=[objects[route.obj].pk])
    if route.method == "get":
        return client.get(url)
    data = {k: _value(v, objects) for k, v in route.data}
    return client.post(url, data, HTTP_HX_REQUEST="true")


def _value(value: str, objects: dict) -> str:
    """Object names become their pk; "rev:<name>" becomes the revision stored now, as a
    page that was just loaded would send it."""
    if value in objects:
        return str(objects[value].pk)
    if value.startswith("rev:"):
        name = value[4:]
        if name == "rubric":
            return str(objects["task"].rubric_versions.order_by("-number").first().revision)
        obj = objects[name]
        obj.refresh_from_db(fields=["revision"])
        return str(obj.revision)
    return value


def claim_for(user, objects):
    """Decide/release need the acting reviewer to hold the claim."""
    Submission.objects.filter(pk=objects["submission"].pk).update(claimed_by=user)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_outsiders_get_404_and_change_nothing(client, other_team, objects, route):
    for user in (other_team.author, other_team.reviewer, other_team.admin):
        client.force_login(user)
        before = fingerprint()
        assert request(client, route, objects).status_code == 404, user
        assert fingerprint() == before


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_anonymous_is_sent_to_sign_in(client, objects, route):
    response = request(client, route, objects)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_each_role_gets_what_it_may(client, team, objects, route, role):
    user = getattr(team, role)
    if route.name in ("submission-decide", "submission-release"):
        claim_for(user, objects)
    client.force_login(user)
    before = fingerprint()
    response = request(client, route, objects)
    may = role in MAY[route.who]
    if may:
        assert response.status_code in (200, 302), (response.status_code, response.content[:300])
        if route.method == "post" and route.name != "document-preview":
            assert fingerprint() != before
    else:
        # admin-only pages are hidden (404); other refusals explain themselves (422)
        # or, for reviewing, come back as a message on the redirect.
        assert response.status_code in (404, 422, 302)
        if response.status_code == 302:
            assert route.name in ("task-submit", "submission-release")
        assert fingerprint() == before
