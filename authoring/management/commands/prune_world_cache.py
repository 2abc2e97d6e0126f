"""manage.py prune_world_cache [--older-than DAYS]: delete rendered world zips kept longer
than DAYS (30 by default). The cache (authoring.archipelago.cache) only grows by itself;
a pack that needs a pruned world renders it again."""

from django.core.management.base import BaseCommand, CommandError

from authoring.archipelago.cache import FOLDER, stored_world_zips_prune


class Command(BaseCommand):
    help = "Delete rendered world zips kept longer than --older-than days (a pack renders a pruned world again)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--older-than", type=float, default=30.0, metavar="DAYS", help="age in days (default 30)")

    def handle(self, *args, older_than: float, **options) -> None:
        if older_than < 0:
            raise CommandError("--older-than is a number of days, 0 or more.")
        files, size = stored_world_zips_prune(older_than_days=older_than)
        self.stdout.write(f"Deleted {files} file{'s' if files != 1 else ''} ({size:,} bytes) of the world cache ({FOLDER}/) "
                          f"older than {older_than:g} days.")
