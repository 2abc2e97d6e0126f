"""Build a pack from the command line, for admins who script releases.

    manage.py build_pack --project corporate-law-ma --as demo-admin --name Release [--formats apex,inspect] [--out release.zip]

Takes every approved task version of the project (the newest approved version of each
task) unless --submission ids are given, builds it here (no worker needed) and prints
where the zip is and its sha256.
"""

import shutil

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from accounts.models import Project, User
from core.exceptions import ApplicationError
from packs.formats import ALL_FORMATS
from packs.models import Pack, PackStatus
from packs.services import newest_approved_submission_ids, pack_build, pack_create
from reviews.models import Submission


class Command(BaseCommand):
    help = "Build a pack of approved task versions (the next version of the project's packs)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="The project's slug.")
        parser.add_argument("--as", dest="username", required=True, help="An admin of the project: the pack is built in their name.")
        parser.add_argument("--name", default="pack", help="The pack's name.")
        parser.add_argument(
            "--formats", default=",".join(ALL_FORMATS), help=f"Comma-separated, from: {', '.join(ALL_FORMATS)} (default: all)."
        )
        parser.add_argument(
            "--submission", type=int, action="append", dest="submissions", help="A submission id (repeat); default: all approved."
        )
        parser.add_argument("--out", help="Copy the built zip to this path.")

    def handle(self, *args, project, username, name, formats, submissions, out, **options):
        try:
            project_row = Project.objects.get(slug=project)
            user = User.objects.get(username=username)
        except (Project.DoesNotExist, User.DoesNotExist) as exc:
            raise CommandError(str(exc)) from None
        if not submissions:
            submissions = newest_approved_submission_ids(Submission.objects.filter(project=project_row))
        try:
            pack = pack_create(project_id=project_row.pk, user=user, name=name, submission_ids=submissions,
                               formats=[f.strip() for f in formats.split(",") if f.strip()])
        except Http404:
            raise CommandError(f"{username} is not a member of {project_row.name}: only its admins build packs.") from None
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        pack_build(pack_id=pack.pk)  # here and now; the worker's message finds it built and does nothing
        pack = Pack.objects.get(pk=pack.pk)
        if pack.status != PackStatus.READY:
            raise CommandError(f"{pack} was not built: {pack.error}")
        if out:
            with pack.file.open("rb") as source, open(out, "wb") as target:
                shutil.copyfileobj(source, target)
        self.stdout.write(f"Built {pack} ({pack.manifest['counts']['tasks']} tasks, formats: {', '.join(pack.formats)}): "
                          f"{out or pack.file.name}, {pack.size_bytes:,} bytes, sha256 {pack.sha256}")
