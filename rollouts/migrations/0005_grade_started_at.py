from django.db import migrations, models
from django.utils import timezone


def mark_running(apps, schema_editor):
    """A grade running now started at the latest now: recovery sends it again only once it
    is past the grading task's hard time limit from here, when no healthy run can be left."""
    Grade = apps.get_model("rollouts", "Grade")
    Grade.objects.filter(status="running").update(started_at=timezone.now())


class Migration(migrations.Migration):

    dependencies = [
        ("rollouts", "0004_rollout_stop_requested"),
    ]

    operations = [
        migrations.AddField(
            model_name="grade",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(mark_running, migrations.RunPython.noop),
    ]
