"""Deleting a task or a world made by mistake: the page asks first and says what goes with it;
a task with a history in the audit trail, a world a task uses, and anything still running
are kept, with the reason; only authors and admins delete; the deletion is in the project's
audit trail."""

import html

from django.db.models import Q
from django.urls import reverse

from authoring.models import Document, EnvTask, RubricVersion, World
from core.views import REFUSAL_HEADER
from llm.models import ModelEndpoint
from reviews import services
from reviews.models import AuditEvent, AuditVerb
from reviews.services.comments import comment_add
from rollouts.agent import rollout_execute
from rollouts.models import Grade, ProbeRun, Rollout, RolloutBatch, Step
from rollouts.services import rollout_batch_start
from tests import factories
from verification.services import probe_run_start
from workspace.models import Overlay


def text(response) -> str:
    return html.unescape(response.content.decode())


def _tried(team, world):
    """A task tried in trials (one rollout run to its end by the scripted model, one still
    queued, then cancelled) and probed: what a deletion must take with it."""
    task = factories.env_task(world, team.author, title="Scratch task")
    endpoint = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    batch = rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=2)
    rollout_execute(rollout_id=batch.rollouts.get(index=0).pk)
    Rollout.objects.filter(batch=batch, index=1).update(status="cancelled")
    run = probe_run_start(env_task=task, user=team.author, judge_endpoint=endpoint)
    # (grading never runs in these tests: its jobs wait for a commit) graded, as if it had
    Grade.objects.filter(Q(probe__run=run) | Q(rollout__batch=batch)).update(status="graded")
    ProbeRun.objects.filter(pk=run.pk).update(status="ready")
    return task


def test_an_author_deletes_a_tried_task_after_seeing_what_goes_with_it(client, team):
    world = factories.world(team.project, team.author)
    task = _tried(team, world)
    keep = factories.env_task(world, team.author, title="Keep me")
    client.force_login(team.author)

    editor = client.get(reverse("task-editor", args=[task.pk]))
    assert reverse("task-delete", args=[task.pk]) in editor.content.decode()
    asked = client.get(reverse("task-delete", args=[task.pk]))
    assert asked.status_code == 200
    page = text(asked)
    assert "Delete the task “Scratch task”?" in page
    assert "1 trial batch" in page and "2 trial rollouts with their steps and grades" in page and "1 probe run" in page
    assert "1 rubric version" in page

    done = client.post(reverse("task-delete", args=[task.pk]), follow=True)
    assert done.redirect_chain[-1][0] == reverse("project-detail", args=[team.project.pk])
    assert "The task “Scratch task” was deleted" in text(done)
    assert not EnvTask.objects.filter(pk=task.pk).exists()
    assert not RolloutBatch.objects.filter(env_task_id=task.pk).exists() and not ProbeRun.objects.filter(env_task_id=task.pk).exists()
    assert not Step.objects.exists() and not Grade.objects.exists() and not RubricVersion.objects.filter(env_task_id=task.pk).exists()
    assert not Overlay.objects.filter(world=world, purpose="rollout").exists()  # what the trials' agents wrote
    assert EnvTask.objects.filter(pk=keep.pk).exists() and World.objects.filter(pk=world.pk).exists()
    event = AuditEvent.objects.get(verb=AuditVerb.TASK_DELETED)
    assert (event.project_id, event.env_task_id, event.actor, event.data["title"]) == (team.project.pk, None, team.author, "Scratch task")


def test_a_task_with_a_history_or_a_run_in_progress_is_kept_with_the_reason(client, team):
    world = factories.world(team.project, team.author)
    submitted = factories.env_task(world, team.author, title="Went to review")
    services.submission_create(env_task=submitted, user=team.author)
    discussed = factories.env_task(world, team.author, title="Discussed")
    comment_add(env_task=discussed, user=team.reviewer, body="Which clause?", anchor="prompt")
    running = factories.env_task(world, team.author, title="Running")
    rollout_batch_start(env_task=running, user=team.author, endpoint=ModelEndpoint.objects.create(name="S", kind="scripted"), n=1)
    client.force_login(team.author)
    for task, reason in ((submitted, "has a history in the audit trail"), (discussed, "has a history in the audit trail"),
                         (running, "still running on this task")):
        asked = client.get(reverse("task-delete", args=[task.pk]))
        assert asked.status_code == 422 and reason in text(asked) and 'id="delete-button"' not in asked.content.decode()
        refused = client.post(reverse("task-delete", args=[task.pk]))
        assert refused.status_code == 422 and reason in text(refused)
        assert EnvTask.objects.filter(pk=task.pk).exists()
    assert not AuditEvent.objects.filter(verb=AuditVerb.TASK_DELETED).exists()


def test_reviewers_may_not_delete_and_outsiders_do_not_see_the_task(client, team, other_team):
    world = factories.world(team.project, team.author)
    task = factories.env_task(world, team.author)
    client.force_login(team.reviewer)
    editor = client.get(reverse("task-editor", args=[task.pk]))
    assert reverse("task-delete", args=[task.pk]) not in editor.content.decode()
    asked = client.get(reverse("task-delete", args=[task.pk]))
    assert asked.status_code == 403 and asked[REFUSAL_HEADER] and "authors and admins can" in text(asked)
    assert client.post(reverse("task-delete", args=[task.pk])).status_code == 403
    assert client.post(reverse("world-delete", args=[world.pk])).status_code == 403
    client.force_login(other_team.admin)
    assert client.post(reverse("task-delete", args=[task.pk])).status_code == 404
    assert client.get(reverse("world-delete", args=[world.pk])).status_code == 404
    assert EnvTask.objects.filter(pk=task.pk).exists() and World.objects.filter(pk=world.pk).exists()


def test_a_world_is_deleted_once_no_task_uses_it_with_its_documents_and_sandboxes(client, team):
    world = factories.world(team.project, team.author, title="Try-out world", documents=3)
    Overlay.objects.create(world=world, label="Sandbox")
    task = factories.env_task(world, team.author)
    client.force_login(team.admin)

    asked = client.get(reverse("world-delete", args=[world.pk]))
    assert asked.status_code == 422 and "A task uses this world, so it is kept" in text(asked)
    assert client.post(reverse("world-delete", args=[world.pk])).status_code == 422 and World.objects.filter(pk=world.pk).exists()

    client.post(reverse("task-delete", args=[task.pk]))
    editor = client.get(reverse("world-editor", args=[world.pk]))
    assert reverse("world-delete", args=[world.pk]) in editor.content.decode()
    asked = client.get(reverse("world-delete", args=[world.pk]))
    assert asked.status_code == 200 and "3 documents with their versions" in text(asked) and "1 sandbox" in text(asked)
    done = client.post(reverse("world-delete", args=[world.pk]), follow=True)
    assert "The world “Try-out world” was deleted" in text(done)
    assert not World.objects.filter(pk=world.pk).exists() and not Document.objects.filter(world_id=world.pk).exists()
    assert not Overlay.objects.filter(world_id=world.pk).exists()
    assert AuditEvent.objects.get(verb=AuditVerb.WORLD_DELETED).data == {"world": world.pk, "title": "Try-out world"}
