"""The audit trail: one immutable timeline per task (QA events, rubric versions, document
versions), per project for its admins, filterable and paginated, on the pages, the API and
in the pack's manifest."""

import html
import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from authoring import services as authoring_services
from core.views import REFUSAL_HEADER
from packs.models import PackStatus
from packs.services import pack_build, pack_create
from reviews import services
from reviews.models import AuditEvent, AuditVerb, Decision
from reviews.selectors import checklist_items
from reviews.selectors.audit import audit_entries, audit_timeline
from reviews.services import ChecklistMark
from reviews.services.comments import comment_add
from tests import factories


def text(response) -> str:
    """The page as the user reads it (entities such as &#x27; decoded)."""
    return html.unescape(response.content.decode())


def marks(project_id: int, *, fail: int = 0) -> list[ChecklistMark]:
    items = checklist_items(project_id=project_id)
    return [ChecklistMark(item.pk, i >= fail, note="" if i >= fail else "Too vague") for i, item in enumerate(items)]


def history(team, world, env_task):
    """Edit a document, submit, claim, release, claim again, request changes, comment, edit
    the rubric (a new version), submit again: the story every test below reads."""
    document = world.documents.order_by("position", "id").first()
    authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="The price is $12m.")
    first = services.submission_create(env_task=env_task, user=team.author, note="Ready for a look")
    assert services.submission_claim_next(user=team.reviewer) == first
    services.submission_release(submission=first, user=team.reviewer)
    assert services.submission_claim_next(user=team.reviewer) == first
    services.review_decide(submission=first, user=team.reviewer, decision=Decision.REQUEST_CHANGES, comment="Name the buyer.",
                           checklist=marks(team.project.pk, fail=1))
    comment_add(env_task=env_task, user=team.reviewer, body="Criterion 2 is too loose.", submission=first)
    rubric = env_task.rubric_versions.order_by("-number").first()
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Names the buyer", points=3)
    second = services.submission_create(env_task=env_task, user=team.author)
    return document, first, second


EXPECTED_KINDS = [
    "rubric_version",  # version 1, made with the task
    "document_version",  # the edit of Deal/Doc 1.md
    "submitted", "claimed", "released", "claimed", "checklist", "reviewed", "changes_requested",
    "commented",
    "rubric_version",  # version 2, made by editing the frozen rubric
    "submitted",
]


def test_a_task_timeline_merges_qa_events_rubric_and_document_versions_in_time_order(team, world, env_task):
    document, first, _ = history(team, world, env_task)
    entries = audit_entries(audit_timeline(env_task=env_task))
    assert [e.kind for e in entries] == EXPECTED_KINDS
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    by_kind = {e.kind: e for e in entries}
    assert entries[0].summary == "Rubric version 1 created" and entries[0].actor == team.author.username
    assert entries[-2].summary == "Rubric version 2 created"
    assert by_kind["document_version"].summary == f"{document.path}: version 1 (edited by hand)"
    assert by_kind["document_version"].link == reverse("document-versions", args=[document.pk])
    assert by_kind["checklist"].actor == team.reviewer.username and "1 fail" in by_kind["checklist"].summary
    assert by_kind["changes_requested"].submission == 1 and entries[-1].submission == 2
    assert by_kind["released"].link == reverse("submission-review", args=[first.pk])
    assert "Criterion 2 is too loose." in by_kind["commented"].summary
    assert by_kind["commented"].link == reverse("task-comments", args=[env_task.pk])


def test_the_timeline_filters_by_kind_person_and_day_and_refuses_unknown_kinds(team, world, env_task):
    from core.exceptions import ApplicationError
    from reviews.selectors.audit import audit_filters_clean

    history(team, world, env_task)
    reviewer_only = audit_filters_clean(project_id=team.project.pk, actor=team.reviewer.username)
    kinds = [e.kind for e in audit_entries(audit_timeline(env_task=env_task, **reviewer_only.as_kwargs()))]
    assert kinds == ["claimed", "released", "claimed", "checklist", "reviewed", "changes_requested", "commented"]
    rubric_only = audit_filters_clean(project_id=team.project.pk, kind="rubric_version")
    assert [e.summary for e in audit_entries(audit_timeline(env_task=env_task, **rubric_only.as_kwargs()))] == [
        "Rubric version 1 created", "Rubric version 2 created"]
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    later = audit_filters_clean(project_id=team.project.pk, since=tomorrow)
    assert not audit_timeline(env_task=env_task, **later.as_kwargs()).exists()
    today = audit_filters_clean(project_id=team.project.pk, since=timezone.localdate().isoformat(), until=timezone.localdate().isoformat())
    assert audit_timeline(env_task=env_task, **today.as_kwargs()).count() == len(EXPECTED_KINDS)
    with pytest.raises(ApplicationError, match="Unknown kind of event 'deleted'"):
        audit_filters_clean(project_id=team.project.pk, kind="deleted")
    with pytest.raises(ApplicationError, match="not a member of this project"):
        audit_filters_clean(project_id=team.project.pk, actor="mallory")
    with pytest.raises(ApplicationError, match="must look like"):
        audit_filters_clean(project_id=team.project.pk, since="yesterday")


def test_the_task_page_shows_the_history_to_members_and_its_htmx_fragment(client, team, world, env_task):
    history(team, world, env_task)
    client.force_login(team.author2)  # any member of the project
    url = reverse("task-audit", args=[env_task.pk])
    page = client.get(url)
    assert page.status_code == 200
    page_text = text(page)
    assert "History of" in page_text and "Rubric version 2 created" in page_text and "Criterion 2 is too loose." in page_text
    assert page_text.index("Rubric version 1 created") < page_text.index("Submitted version 1") < page_text.index("Submitted version 2")
    fragment = client.get(url, {"kind": "commented"}, HTTP_HX_REQUEST="true")
    body = text(fragment)
    assert fragment.status_code == 200 and body.lstrip().startswith('<section class="card" id="task-audit">')
    assert "Criterion 2 is too loose." in body and "Submitted version" not in body and "<html" not in body
    bad = client.get(url, {"kind": "everything-ever"})
    assert bad.status_code == 422 and "Unknown kind of event" in text(bad)
    editor = text(client.get(reverse("task-editor", args=[env_task.pk])))
    assert url in editor  # the task page links its history


def test_the_task_history_is_404_outside_the_project(client, team, other_team, world, env_task):
    client.force_login(other_team.admin)
    assert client.get(reverse("task-audit", args=[env_task.pk])).status_code == 404
    assert client.get(f"/api/tasks/{env_task.pk}/audit/").status_code == 404


def test_the_project_audit_is_for_admins_403_for_other_members_404_outside(client, team, other_team, world, env_task):
    history(team, world, env_task)
    services.review_policy_update(project_id=team.project.pk, user=team.admin, approvals_required=2)
    url = reverse("project-audit", args=[team.project.pk])
    client.force_login(team.reviewer)
    refused = client.get(url)
    assert refused.status_code == 403 and "Only the project's admins" in text(refused) and refused[REFUSAL_HEADER]
    assert "Name the buyer" not in text(refused)
    assert client.get(f"/api/projects/{team.project.pk}/audit/").status_code == 403
    client.force_login(other_team.admin)
    assert client.get(url).status_code == 404
    assert client.get(f"/api/projects/{team.project.pk}/audit/").status_code == 404
    client.force_login(team.admin)
    page_text = text(client.get(url))
    assert "Review policy: approvals required = 2" in page_text  # project-wide events, not only tasks'
    # newest first
    assert page_text.index("Review policy") < page_text.index("Submitted version 2") < page_text.index("Submitted version 1")
    assert url in text(client.get(reverse("project-detail", args=[team.project.pk])))
    client.force_login(team.author)
    assert url not in text(client.get(reverse("project-detail", args=[team.project.pk])))


def test_the_project_audit_filters_through_the_form_and_htmx(client, team, world, env_task):
    history(team, world, env_task)
    client.force_login(team.admin)
    url = reverse("project-audit", args=[team.project.pk])
    response = client.get(url, {"kind": "submitted", "actor": team.author.username}, HTTP_HX_REQUEST="true")
    body = text(response)
    assert response.status_code == 200 and 'id="audit-results"' in body and "<html" not in body
    assert body.count("<tr>") == 2 + 1  # header + two submissions
    assert "Claimed version" not in body
    unknown = client.get(url, {"actor": "nobody-here"})
    assert unknown.status_code == 422 and "is not a member of this project" in text(unknown)
    empty = client.get(url, {"since": "2001-01-01", "until": "2001-01-02"})
    assert "Nothing matches these filters" in text(empty)


def test_a_long_trail_is_paginated_on_the_page_and_the_api(client, team, world, env_task):
    now = timezone.now()
    AuditEvent.objects.bulk_create([
        AuditEvent(project=team.project, env_task=env_task, actor=team.reviewer, verb=AuditVerb.COMMENTED,
                   summary=f"Comment number {i:04d}", at=now + timedelta(seconds=i))
        for i in range(120)
    ])
    client.force_login(team.author)
    url = reverse("task-audit", args=[env_task.pk])
    first = text(client.get(url, {"kind": "commented"}))
    assert "Comment number 0000" in first and "Comment number 0049" in first and "Comment number 0050" not in first
    assert "Page 1 of 3" in first and "kind=commented" in first  # the filter rides along the page links
    last = text(client.get(url, {"kind": "commented", "page": 3}))
    assert "Comment number 0119" in last and "Comment number 0099" not in last
    api = client.get(f"/api/tasks/{env_task.pk}/audit/", {"kind": "commented", "limit": 10, "offset": 100}).json()
    assert api["count"] == 120 and [e["summary"] for e in api["results"]][:2] == ["Comment number 0100", "Comment number 0101"]
    assert api["results"][0]["actor"] == team.reviewer.username and api["results"][0]["kind"] == "commented"


def test_the_api_refuses_unknown_filters_and_values(client, team, world, env_task):
    client.force_login(team.admin)
    base = f"/api/projects/{team.project.pk}/audit/"
    assert client.get(base, {"kind": "nonsense"}).status_code == 400
    assert "Unknown kind of event" in client.get(base, {"kind": "nonsense"}).json()["detail"]
    assert client.get(base, {"verb": "submitted"}).status_code == 400  # not an allowed parameter
    assert client.get(base, {"until": "31/12/2026"}).status_code == 400
    assert client.get(base).json()["count"] >= 1  # the rubric version made with the task


def test_the_pack_manifest_carries_each_task_versions_audit_trail(team, world, env_task):
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Text.")
    history(team, world, env_task)
    second = env_task.submissions.get(number=2)
    assert services.submission_claim_next(user=team.reviewer) == second
    services.review_decide(submission=second, user=team.reviewer, decision=Decision.APPROVE, checklist=marks(team.project.pk))
    other = factories.env_task(world, team.author, title="Another task")
    approved_other = services.submission_create(env_task=other, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.review_decide(submission=approved_other, user=team.reviewer, decision=Decision.APPROVE, checklist=marks(team.project.pk))
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Audited", submission_ids=[second.pk, approved_other.pk],
                       formats=["taskwright"])
    comment_add(env_task=env_task, user=team.reviewer, body="Said after the pack was made")
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    with pack.file.open("rb") as handle:
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(handle.read())).read("manifest.json"))
    assert "audit" in manifest["may_differ"]
    rows = {row["task_pk"]: row for row in manifest["tasks"]}
    trail = rows[env_task.pk]["audit"]
    kinds = [line["kind"] for line in trail]
    assert kinds[:3] == ["rubric_version", "document_version", "document_version"]
    assert kinds.count("submitted") == 2 and "changes_requested" in kinds and kinds[-1] == "approved"
    assert all(set(line) == {"at", "actor", "kind", "summary", "submission"} for line in trail)
    assert trail[0]["at"].endswith("+00:00") and trail[0]["actor"] == team.author.username
    approved = next(line for line in trail if line["kind"] == "approved")
    assert approved["submission"] == 2 and approved["summary"] == "Version 2 approved"
    assert not any("after the pack was made" in line["summary"] for line in trail)  # up to the pack, not after
    other_kinds = [line["kind"] for line in rows[other.pk]["audit"]]
    assert "changes_requested" not in other_kinds and other_kinds.count("submitted") == 1
    assert other_kinds.count("document_version") == kinds.count("document_version") == 3  # the shared world's, in both trails


def test_the_trails_of_a_chunk_of_tasks_cost_one_query(team, world, env_task, django_assert_num_queries):
    from reviews.selectors.audit import audit_trails_for_tasks

    history(team, world, env_task)
    others = [factories.env_task(world, team.author, title=f"Task {i}") for i in range(5)]
    tasks = {t.pk: t.world_id for t in [env_task, *others]}
    with django_assert_num_queries(1):
        trails = audit_trails_for_tasks(tasks=tasks, until=timezone.now())
    assert [line["kind"] for line in trails[env_task.pk]] == EXPECTED_KINDS
    assert [line["kind"] for line in trails[others[0].pk]] == ["document_version", "rubric_version"]
