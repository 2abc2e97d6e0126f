"""The demo world (manage.py seed_demo) exports, parses back and round-trips."""

import io
import zipfile

from django.core.management import call_command

from accounts.models import User
from authoring.models import World
from tests.archipelago.conftest import export_bytes, import_bytes


def test_the_demo_world_round_trips(db, media):
    call_command("seed_demo", stdout=io.StringIO())
    world = World.objects.get()
    author = User.objects.get(username="demo-author")
    data = export_bytes(world, author)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    kinds = set(world.documents.values_list("kind", flat=True))
    assert ("email" not in kinds or ".apps_data/mail/sent.mbox" in names) and (
        "event" not in kinds or ".apps_data/calendar/calendar.ics" in names
    )
    copy = import_bytes(data, world.project, author)
    assert export_bytes(copy, author) == data
    assert copy.documents.count() == world.documents.count()
