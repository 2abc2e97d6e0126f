from datetime import timedelta

from django.db import migrations, models
from django.db.models import F


def alive_until_their_limit(apps, schema_editor):
    """A job running now keeps the rule it started under: it counts as alive until its
    task's hard time limit has passed since it started."""
    Model = apps.get_model("rollouts", "Grade")
    Model.objects.filter(status="running", started_at__isnull=False).update(heartbeat_at=F("started_at") + timedelta(minutes=30))


class Migration(migrations.Migration):

    dependencies = [
        ("rollouts", "0005_grade_started_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="grade",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, help_text="The last sign of life of the worker running it (core.jobs).", null=True),
        ),
        migrations.RunPython(alive_until_their_limit, migrations.RunPython.noop),
    ]
