"""manage.py export_world <world id> <out.zip>: a world as a zip in the APEX-Agents /
Archipelago layout (the same file the world page's Export button downloads)."""

import shutil
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from authoring.models import World
from authoring.services.world_transfer import world_export_archive
from core.exceptions import ApplicationError


class Command(BaseCommand):
    help = "Export a world as a zip in the APEX-Agents / Archipelago layout."

    def add_arguments(self, parser) -> None:
        parser.add_argument("world_id", type=int)
        parser.add_argument("out", help="where to write the zip, e.g. world.zip")

    def handle(self, *args, world_id: int, out: str, **options) -> None:
        world = World.objects.filter(pk=world_id).first()
        if world is None:
            raise CommandError(f"There is no world {world_id}.")
        try:
            archive = world_export_archive(world=world)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        with archive:
            target = Path(out)
            partial = target.with_name(target.name + ".partial")  # a reader never sees half a zip
            with open(partial, "wb") as handle:
                shutil.copyfileobj(archive, handle)
            partial.replace(target)
        self.stderr.write(f"Exported world {world.pk} ({world.title}) to {target} ({target.stat().st_size:,} bytes).")
