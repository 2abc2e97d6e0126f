"""Import a Taskwright pack into a project from the command line.

    manage.py import_pack release.zip --project other-project --as their-admin
"""

from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from accounts.models import Project, User
from core.exceptions import ApplicationError
from packs.services import pack_import


class Command(BaseCommand):
    help = "Rebuild the tasks of a Taskwright pack (its own format) as drafts in a project."

    def add_arguments(self, parser):
        parser.add_argument("path", help="The pack zip.")
        parser.add_argument("--project", required=True, help="The project's slug.")
        parser.add_argument("--as", dest="username", required=True, help="An admin of the project.")
        parser.add_argument("--again", action="store_true", help="Import even if this pack was imported into the project before.")

    def handle(self, *args, path, project, username, again=False, **options):
        try:
            project_row = Project.objects.get(slug=project)
            user = User.objects.get(username=username)
        except (Project.DoesNotExist, User.DoesNotExist) as exc:
            raise CommandError(str(exc)) from None
        try:
            with open(path, "rb") as handle:
                tasks = pack_import(project_id=project_row.pk, user=user, uploaded_file=File(handle, name=path), again=again)
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except Http404:
            raise CommandError(f"{username} is not a member of {project_row.name}: only its admins import packs.") from None
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Imported {len(tasks)} task(s) into {project_row.name}: " + ", ".join(f"{t.title} (#{t.pk})" for t in tasks))
