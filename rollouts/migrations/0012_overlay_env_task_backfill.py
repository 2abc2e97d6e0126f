"""Trial runs' overlays made before overlays knew their task: each gets its batch's task,
so its input files show in the overlay (tools, MCP and the replica apps) as the agent read them."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def backfill(apps, schema_editor):
    Overlay = apps.get_model("workspace", "Overlay")
    Rollout = apps.get_model("rollouts", "Rollout")
    task_of = Rollout.objects.filter(overlay_id=OuterRef("pk")).values("batch__env_task_id")[:1]
    Overlay.objects.filter(purpose="rollout", env_task__isnull=True).update(env_task_id=Subquery(task_of))


class Migration(migrations.Migration):
    dependencies = [
        ("rollouts", "0011_grade_cancelled"),
        ("workspace", "0003_overlay_env_task"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
