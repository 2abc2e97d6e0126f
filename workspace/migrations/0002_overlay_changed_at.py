from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery


def backfill(apps, schema_editor):
    """An overlay changed last when its newest entry was written."""
    Overlay = apps.get_model("workspace", "Overlay")
    OverlayEntry = apps.get_model("workspace", "OverlayEntry")
    newest = OverlayEntry.objects.filter(overlay=OuterRef("pk")).values("overlay").annotate(at=Max("updated_at")).values("at")
    Overlay.objects.update(changed_at=Subquery(newest))


class Migration(migrations.Migration):

    dependencies = [
        ("workspace", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="overlay",
            name="changed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
