"""DELETE /api/tasks/{id}/ and /api/worlds/{id}/: the pages' rules, as JSON."""

from authoring.models import EnvTask, World
from reviews import services
from reviews.models import AuditEvent, AuditVerb
from tests import factories


def test_delete_a_task_then_its_world_and_the_refusals_on_the_way(team, other_team, api_for):
    world = factories.world(team.project, team.author, title="Scratch world")
    task = factories.env_task(world, team.author, title="Scratch")
    kept = factories.env_task(world, team.author, title="Submitted")
    services.submission_create(env_task=kept, user=team.author)
    author, reviewer = api_for(team.author), api_for(team.reviewer)

    assert reviewer.delete(f"/api/tasks/{task.pk}/").status_code == 403
    assert api_for(other_team.admin).delete(f"/api/tasks/{task.pk}/").status_code == 404
    refused = author.delete(f"/api/tasks/{kept.pk}/")
    assert refused.status_code == 400 and "has a history in the audit trail" in refused.json()["detail"]
    assert author.delete(f"/api/worlds/{world.pk}/").json()["detail"].startswith("2 tasks use this world, so it is kept")

    assert author.delete(f"/api/tasks/{task.pk}/").status_code == 204
    assert not EnvTask.objects.filter(pk=task.pk).exists() and EnvTask.objects.filter(pk=kept.pk).exists()
    assert author.get(f"/api/tasks/{task.pk}/").status_code == 404
    assert World.objects.filter(pk=world.pk).exists()
    assert author.delete(f"/api/worlds/{world.pk}/").json()["detail"].startswith("A task uses this world, so it is kept")
    assert author.get(f"/api/tasks/{kept.pk}/").json()["title"] == "Submitted"  # the detail API still reads and edits
    assert list(AuditEvent.objects.filter(verb__in=[AuditVerb.TASK_DELETED, AuditVerb.WORLD_DELETED]).values_list("verb", flat=True)) == [
        AuditVerb.TASK_DELETED
    ]


def test_an_empty_world_is_deleted(team, api_for):
    world = factories.world(team.project, team.author)
    assert api_for(team.admin).delete(f"/api/worlds/{world.pk}/").status_code == 204
    assert not World.objects.filter(pk=world.pk).exists()
