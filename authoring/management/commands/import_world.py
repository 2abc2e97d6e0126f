"""manage.py import_world <project id> <world.zip> --user <username> [--title T]: a
world zip in the APEX-Agents / Archipelago layout as a new world of the project, with
the same checks and role rules as the Import form (the user must author in the project)."""

from pathlib import Path

from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from accounts.models import User
from authoring.services.world_transfer import world_import
from core.exceptions import ApplicationError


class Command(BaseCommand):
    help = "Import a world zip (APEX-Agents / Archipelago layout) as a new world of a project."

    def add_arguments(self, parser) -> None:
        parser.add_argument("project_id", type=int)
        parser.add_argument("archive", help="the world zip")
        parser.add_argument("--user", required=True, help="username of an author or admin of the project; the world is theirs")
        parser.add_argument("--title", default="", help="the new world's title (default: the one stored in the zip, else its file name)")

    def handle(self, *args, project_id: int, archive: str, user: str, title: str, **options) -> None:
        account = User.objects.filter(username=user).first()
        if account is None:
            raise CommandError(f"There is no user {user!r}.")
        path = Path(archive)
        if not path.is_file():
            raise CommandError(f"{archive} is not a file.")
        try:
            with open(path, "rb") as handle:
                world = world_import(project_id=project_id, user=account, uploaded_file=File(handle, name=path.name), title=title)
        except Http404:
            raise CommandError(f"{user} is not a member of project {project_id} (or it does not exist).") from None
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"Imported world {world.pk} ({world.title}) with {world.documents.count()} documents.")
