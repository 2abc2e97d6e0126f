"""manage.py seed_demo [--data DIR]: load the demo (demo.services.demo_seed) from its data
files (demo/data, or a copy with edits) and print the demo logins. Idempotent."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.exceptions import ApplicationError
from demo.content import DATA_DIR, demo_content_load
from demo.services import demo_seed


class Command(BaseCommand):
    help = "Create the demo project, users, world and task (idempotent) and print the demo logins."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--data", type=Path, default=DATA_DIR, help=f"a folder laid out like {DATA_DIR} (default: that one)")

    def handle(self, *args, data: Path, **options) -> None:
        logins_path = Path(settings.VAR_DIR) / "demo_logins.json"
        try:
            logins = demo_seed(content=demo_content_load(data_dir=data), logins_path=logins_path, say=self._say)
        except ApplicationError as error:
            raise CommandError(error.message) from error

        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo logins (kept in {logins_path}):"))
        for login in logins:
            self.stdout.write(f"  {login.user.role.label:<9} username: {login.user.username:<14} password: {login.password}")
        self.stdout.write("")

    def _say(self, message: str) -> None:
        self.stdout.write(f"seed_demo: {message}")
