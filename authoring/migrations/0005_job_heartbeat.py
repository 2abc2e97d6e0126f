from datetime import timedelta

from django.db import migrations, models
from django.db.models import F


def alive_until_their_limit(apps, schema_editor):
    """A job running now keeps the rule it started under: it counts as alive until its
    task's hard time limit has passed since it started."""
    Model = apps.get_model("authoring", "DraftJob")
    Model.objects.filter(status="running", started_at__isnull=False).update(heartbeat_at=F("started_at") + timedelta(minutes=15))


class Migration(migrations.Migration):

    dependencies = [
        ("authoring", "0004_rubricversion_all_must_pass_and_more"),
    ]

    operations = [
        migrations.AddField(
            model_name="draftjob",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, help_text="The last sign of life of the worker running it (core.jobs).", null=True),
        ),
        migrations.RunPython(alive_until_their_limit, migrations.RunPython.noop),
    ]
