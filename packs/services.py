import hashlib
import logging
import tempfile
from datetime import timedelta

from django.core.files import File
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from accounts.selectors import membership_get
from accounts.services import require_role
from core.exceptions import ApplicationError
from core.jobs import JobStates, claim_job, kept_alive, stale
from packs.builders import build_taskwright_pack
from packs.models import Pack, PackStatus
from reviews.models import Submission, SubmissionStatus

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
MAX_TASKS_PER_PACK = 10_000
BUILD_STATES = JobStates(queued=PackStatus.QUEUED, running=PackStatus.BUILDING, failed=PackStatus.FAILED)


@transaction.atomic
def pack_create(*, project_id: int, user, name: str, submission_ids: list[int]) -> Pack:
    """Record a new pack version of the chosen approved submissions and queue its build."""
    membership = membership_get(user=user, project_id=project_id)
    require_role(membership, "export")
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise ApplicationError("Give the pack a name (120 characters at most).")
    if any(ch in name for ch in "/\\\x00") or name.startswith("."):
        raise ApplicationError("A pack name cannot contain slashes or start with a dot.")
    if len(submission_ids) > MAX_TASKS_PER_PACK:
        raise ApplicationError(f"A pack holds at most {MAX_TASKS_PER_PACK:,} task versions.")
    ids = {int(i) for i in submission_ids}
    if not ids:
        raise ApplicationError("Choose at least one approved task.")
    submissions = list(Submission.objects.filter(pk__in=ids, project_id=project_id, status=SubmissionStatus.APPROVED))
    if len(submissions) != len(ids):
        raise ApplicationError("Only approved tasks of this project can go into a pack.")
    version = (Pack.objects.filter(project_id=project_id).aggregate(v=Max("version"))["v"] or 0) + 1
    pack = Pack.objects.create(project_id=project_id, name=name, version=version, created_by=user)
    pack.submissions.set(submissions)
    from packs.tasks import build_pack

    transaction.on_commit(lambda: build_pack.delay(pack.pk))
    return pack


def packs_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the builds whose broker message may be lost (see draft_jobs_recover)."""
    from packs.tasks import build_pack

    now = timezone.now()
    lost = stale(BUILD_STATES, now)
    if queued_for is not None:
        lost |= Q(status=PackStatus.QUEUED, created_at__lt=now - queued_for)
    ids = list(Pack.objects.filter(lost).values_list("pk", flat=True))
    for pack_id in ids:
        build_pack.delay(pack_id)
    return len(ids)


def pack_build(*, pack_id: int) -> None:
    """Build the pack file. Safe to run twice and after a killed worker:

    - a queued pack is claimed by a conditional update;
    - a pack left 'building' by a worker that died (its heartbeat went stale) is taken over
      by the next message for it, up to MAX_ATTEMPTS (core.jobs);
    - a ready or failed pack is left alone.
    The zip is deterministic, so a rebuild produces the same bytes.
    """
    if not claim_job(Pack, pack_id, states=BUILD_STATES, max_attempts=MAX_ATTEMPTS, gave_up="The build was interrupted too many times.", progress=0):
        return
    pack = Pack.objects.select_related("project").get(pk=pack_id)
    try:
        with kept_alive(Pack, pack_id, states=BUILD_STATES):
            _write_pack_file(pack)
    except Exception as exc:  # any failure becomes a readable state, never a stuck pack
        logger.exception("pack %s failed", pack_id)
        Pack.objects.filter(pk=pack_id, status=PackStatus.BUILDING).update(status=PackStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now())


def _write_pack_file(pack: Pack) -> None:
    submissions = pack.submissions.order_by("env_task_id", "number").values("id", "number", "snapshot")

    def on_progress(percent: int) -> None:
        Pack.objects.filter(pk=pack.pk, status=PackStatus.BUILDING).update(progress=min(percent, 99))

    pack_info = {
        "name": pack.name,
        "version": pack.version,
        "project": pack.project.slug,
        "created_at": pack.created_at.isoformat(),
    }
    with tempfile.TemporaryFile() as out:
        manifest = build_taskwright_pack(out, pack_info=pack_info, submissions=submissions.iterator(), on_progress=on_progress)
        size = out.tell()
        out.seek(0)
        digest = hashlib.file_digest(out, "sha256").hexdigest()
        out.seek(0)
        if pack.file:
            pack.file.delete(save=False)
        stored_name = pack.file.storage.save(f"packs/{pack.project.slug}/{pack.filename}", File(out))
    Pack.objects.filter(pk=pack.pk, status=PackStatus.BUILDING).update(
        status=PackStatus.READY,
        progress=100,
        file=stored_name,
        size_bytes=size,
        sha256=digest,
        manifest=manifest,
        error="",
        finished_at=timezone.now(),
    )
