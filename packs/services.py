import hashlib
import logging
import tempfile
from datetime import timedelta
from itertools import batched

from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Max, Min, Q
from django.db.models.fields.json import KT
from django.db.models.functions import MD5
from django.utils import timezone

from accounts.models import Project, User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring import services as authoring
from authoring.archipelago.cache import stored_world_zips
from authoring.services.task_files import task_file_name, task_input_file_add_bytes
from authoring.services.uploads import MAX_UPLOAD_BYTES
from authoring.services.world_transfer import world_import
from core.archives import safe_member_read
from core.exceptions import ApplicationError
from core.jobs import JobStates, claim_job, kept_alive, stale
from packs.build import BuiltTask, BuiltWorld, SubmissionRow, build_pack_zip
from packs.formats import ALL_FORMATS
from packs.formats.records import input_file_path
from packs.importer import MAX_WORLD_ZIP_BYTES, read_pack
from packs.models import Pack, PackStatus, PackTaskEntry, PackWorldEntry
from packs.selectors import pack_import_earlier
from packs.tasks import build_pack
from reviews.models import AuditVerb, Submission, SubmissionStatus
from reviews.selectors.audit import audit_trails_for_tasks
from reviews.services.audit import audit_record
from verification.selectors import task_measurements

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
MAX_TASKS_PER_PACK = 10_000
BUILD_STATES = JobStates(queued=PackStatus.QUEUED, running=PackStatus.BUILDING, failed=PackStatus.FAILED)


def _clean_formats(formats: list[str] | None) -> list[str]:
    chosen = list(ALL_FORMATS) if formats is None else [str(f) for f in formats]
    unknown = sorted(set(chosen) - set(ALL_FORMATS))
    if unknown:
        raise ApplicationError(f"Unknown pack format: {', '.join(unknown)}. Choose from: {', '.join(ALL_FORMATS)}.")
    if not chosen:
        raise ApplicationError("Choose at least one format for the pack.")
    return [key for key in ALL_FORMATS if key in chosen]


@transaction.atomic
def pack_create(*, project_id: int, user: User, name: str, submission_ids: list[int], formats: list[str] | None = None) -> Pack:
    """Record a new pack version of the chosen approved submissions, in the chosen formats
    (all of them by default), and queue its build."""
    membership = membership_get(user=user, project_id=project_id)
    require_role(membership, "export")
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise ApplicationError("Give the pack a name (120 characters at most).")
    if any(ch in name for ch in "/\\\x00") or name.startswith("."):
        raise ApplicationError("A pack name cannot contain slashes or start with a dot.")
    formats = _clean_formats(formats)
    if len(submission_ids) > MAX_TASKS_PER_PACK:
        raise ApplicationError(f"A pack holds at most {MAX_TASKS_PER_PACK:,} task versions.")
    ids = {int(i) for i in submission_ids}
    if not ids:
        raise ApplicationError("Choose at least one approved task.")
    submissions = list(
        Submission.objects.filter(pk__in=ids, project_id=project_id, status=SubmissionStatus.APPROVED).only("pk", "env_task_id")
    )
    if len(submissions) != len(ids):
        raise ApplicationError("Only approved tasks of this project can go into a pack.")
    if len({s.env_task_id for s in submissions}) != len(submissions):
        # Every format names a task by its id (APEX task_id, HealthBench prompt_id, Inspect sample id).
        raise ApplicationError("A pack holds one version of each task: untick the older versions.")
    # A pack name's versions are numbered in turn: lock the project's row so two admins
    # building at once get N+1 and N+2, not one IntegrityError.
    Project.objects.select_for_update().filter(pk=project_id).first()
    version = (Pack.objects.filter(project_id=project_id, name=name).aggregate(v=Max("version"))["v"] or 0) + 1
    pack = Pack.objects.create(project_id=project_id, name=name, version=version, created_by=user, formats=formats)
    pack.submissions.set(submissions)
    transaction.on_commit(lambda: build_pack.delay(pack.pk))
    return pack


def newest_approved_submission_ids(submissions) -> list[int]:
    """Of these submissions, the newest approved version of each task."""
    newest: dict[int, tuple[int, int]] = {}  # task → (submission, number)
    for pk, task_pk, number in submissions.filter(status=SubmissionStatus.APPROVED).values_list("pk", "env_task_id", "number"):
        if task_pk not in newest or number > newest[task_pk][1]:
            newest[task_pk] = (pk, number)
    return [pk for pk, _ in newest.values()]


def pack_build_again(*, pack: Pack, user: User) -> Pack:
    """The next version of a pack: the same name, the formats of its newest built version,
    and every task its newest version held (built again from an older version's page too,
    so a task a later version added is not dropped) at its newest approved version (tasks
    approved since are added on the Packs page)."""
    require_role(membership_get(user=user, project_id=pack.project_id), "export")
    versions = Pack.objects.filter(project_id=pack.project_id, name=pack.name).order_by("-version")
    pack = versions.first() or pack
    if not pack.is_done:
        raise ApplicationError(f"Version {pack.version} of “{pack.name}” is still being built: build again once it has finished "
                               "(or cancel it), so that the next version is compared with a built one.")
    # The formats of the newest version that was built: a failed or cancelled try with fewer
    # formats must not quietly drop the others from the release.
    built = versions.filter(status=PackStatus.READY).first()
    ids = newest_approved_submission_ids(Submission.objects.filter(env_task_id__in=pack.submissions.values("env_task_id")))
    if not ids:
        raise ApplicationError("None of this pack's tasks has an approved version any more: build a new pack on the Packs page.")
    return pack_create(project_id=pack.project_id, user=user, name=pack.name, submission_ids=ids,
                       formats=(built or pack).formats or None)


class BuildCancelled(Exception):
    """The pack was cancelled while this worker built it: stop writing, keep no file."""


@transaction.atomic
def pack_cancel(*, pack: Pack, user: User) -> Pack:
    """Stop a build (admins). A queued pack never starts; a building one stops at its next
    progress beat (packs.build.PROGRESS_EVERY_SECONDS) and keeps no file: a part of a pack
    is not a pack. Build again makes a new version."""
    require_role(membership_get(user=user, project_id=pack.project_id), "export")
    now = timezone.now()
    stopped = Pack.objects.filter(pk=pack.pk, status=PackStatus.QUEUED).update(
        status=PackStatus.CANCELLED, finished_at=now, error="Cancelled before the build started."
    ) or Pack.objects.filter(pk=pack.pk, status=PackStatus.BUILDING).update(
        status=PackStatus.CANCELLED, finished_at=now, error="Cancelled while building."  # the worker says how far it got
    )
    if not stopped:
        pack.refresh_from_db(fields=["status"])
        raise ApplicationError(f"This pack is {pack.get_status_display().lower()} already: there is no build to cancel.")
    pack.refresh_from_db()
    return pack


def packs_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the builds whose broker message may be lost (see draft_jobs_recover)."""
    now = timezone.now()
    lost = stale(BUILD_STATES)
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
    if not claim_job(
        Pack, pack_id, states=BUILD_STATES, max_attempts=MAX_ATTEMPTS, gave_up="The build was interrupted too many times.", progress=0
    ):
        return
    pack = Pack.objects.select_related("project").get(pk=pack_id)
    try:
        with kept_alive(Pack, pack_id, states=BUILD_STATES):
            _write_pack_file(pack)
    except BuildCancelled as cancelled:
        PackTaskEntry.objects.filter(pack_id=pack_id).delete()
        PackWorldEntry.objects.filter(pack_id=pack_id).delete()
        Pack.objects.filter(pk=pack_id, status=PackStatus.CANCELLED).update(error=str(cancelled))
    except Exception as exc:  # any failure becomes a readable state, never a stuck pack, and no file is offered
        if isinstance(exc, ApplicationError):
            logger.info("pack %s failed: %s", pack_id, exc.message)
            error = exc.message
        else:
            logger.exception("pack %s failed", pack_id)
            error = f"Internal error ({type(exc).__name__}: {exc})"
        PackTaskEntry.objects.filter(pack_id=pack_id).delete()
        PackWorldEntry.objects.filter(pack_id=pack_id).delete()
        Pack.objects.filter(pk=pack_id, status=PackStatus.BUILDING).update(
            status=PackStatus.FAILED, error=error[:4000], finished_at=timezone.now()
        )


ROWS_PER_CHUNK = 200  # snapshots read from the database at a time
ENTRIES_PER_INSERT = 500


def _rows(pack: Pack):
    """The pack's task versions, a chunk at a time, with what the manifest says of each.
    Only the task and rubric parts of each snapshot are read, with a digest of its world:
    a world's documents are read once per world state (world_snapshot), not once per task.
    The audit trails of a chunk's tasks are read in one query."""
    query = (Submission.objects.filter(packs=pack).order_by("env_task_id", "number")
             .annotate(world_digest=MD5(KT("snapshot__world")))
             .values_list("id", "number", "snapshot__task", "snapshot__rubric", "snapshot__world__id", "snapshot__world__title",
                          "world_digest", "env_task_id", "rubric_version_id", "rubric_version__pass_threshold",
                          "rubric_version__all_must_pass", "rubric_version__judge_samples"))
    for chunk in batched(query.iterator(chunk_size=ROWS_PER_CHUNK), ROWS_PER_CHUNK):
        measured = task_measurements([(row[7], row[8]) for row in chunk])
        # Up to the pack's creation, not the build's: a pack built again has the same bytes.
        trails = audit_trails_for_tasks(tasks={row[7]: row[4] for row in chunk}, until=pack.created_at)
        for (
            pk,
            number,
            task,
            rubric,
            world_pk,
            world_title,
            world_digest,
            task_pk,
            rubric_id,
            threshold,
            all_must_pass,
            judge_samples,
        ) in chunk:
            difficulty, model_usd = measured[(task_pk, rubric_id)]
            yield SubmissionRow(id=pk, number=number, task=task, rubric=rubric, world_pk=world_pk, world_title=world_title,
                                world_digest=world_digest, pass_threshold=threshold, all_must_pass=all_must_pass,
                                judge_samples=judge_samples, difficulty=difficulty, cost={"model_usd": model_usd, "expert_usd": None},
                                audit=trails[task_pk])


def world_snapshot(submission_id: int) -> dict:
    return Submission.objects.filter(pk=submission_id).values_list("snapshot__world", flat=True).get()


def _world_states(pack: Pack):
    """Each world state the pack holds, once (read one at a time)."""
    firsts = (Submission.objects.filter(packs=pack).annotate(world_digest=MD5(KT("snapshot__world"))).values("world_digest")
              .annotate(first=Min("id")).order_by("first").values_list("first", flat=True))
    for submission_id in list(firsts):
        yield Submission.objects.filter(pk=submission_id).values_list("snapshot__world", flat=True).get()


RENDERING_SHARE = 30  # of the progress bar, when the build has worlds to render


def _write_pack_file(pack: Pack) -> None:
    total = pack.submissions.count()

    def on_progress(percent: int, rendered: str = "") -> None:
        # The cancel check costs nothing more: a pack no longer building updates no row.
        if not Pack.objects.filter(pk=pack.pk, status=PackStatus.BUILDING).update(progress=min(percent, 99)):
            done = written[0] + len(entries)
            how_far = rendered or f"{done} of {total} task version{'s' if total != 1 else ''} were written"
            raise BuildCancelled(f"Cancelled while building, after {how_far}; no file was kept.")

    entries: list[PackTaskEntry] = []

    def on_task(built: BuiltTask) -> None:
        task = built.task
        entries.append(PackTaskEntry(
            pack_id=pack.pk, submission_id=built.submission_id, task_pk=task.task_pk, task_id=task.task_id, title=task.title[:200],
            version=task.version, rubric_version=task.rubric_version, world_id=task.world_id, criteria=len(task.criteria),
            fingerprint=built.fingerprint, difficulty=task.difficulty, cost=task.cost, position=len(entries) + written[0],
        ))
        if len(entries) >= ENTRIES_PER_INSERT:
            flush()

    written = [0]

    def flush() -> None:
        PackTaskEntry.objects.bulk_create(entries)
        written[0] += len(entries)
        entries.clear()

    def on_world(built: BuiltWorld) -> None:
        PackWorldEntry.objects.create(pack_id=pack.pk, world_id=built.world.world_id, world_pk=built.world_pk,
                                      title=built.world.title[:200], digest=built.digest, documents=built.documents,
                                      counts=built.world.counts)

    pack_info = {
        "name": pack.name,
        "version": pack.version,
        "project": pack.project.slug,
        "created_at": pack.created_at.isoformat(),
    }
    # A build taken over after a killed worker starts its records again.
    PackTaskEntry.objects.filter(pack=pack).delete()
    PackWorldEntry.objects.filter(pack=pack).delete()
    # The worlds not rendered yet (an approval renders its own ahead) are rendered first, all
    # in one short-lived child process, so this worker never loads the rendering libraries.
    cache, rendering = stored_world_zips(), [0]

    def on_rendered(done: int, of: int) -> None:
        rendering[0] = RENDERING_SHARE
        on_progress(RENDERING_SHARE * done // of, rendered=f"{done} of {of} world{'s' if of != 1 else ''} were rendered")

    cache.fill(_world_states(pack), on_rendered=on_rendered)
    with tempfile.TemporaryFile() as out:
        manifest = build_pack_zip(
            out, pack_info=pack_info, rows=_rows(pack), total=total, domain=pack.project.name, world_of=world_snapshot,
            cache=cache, open_task_file=lambda sha256: default_storage.open(task_file_name(sha256), "rb"),
            formats=pack.formats or None, on_task=on_task, on_world=on_world,
            on_progress=lambda percent: on_progress(rendering[0] + percent * (100 - rendering[0]) // 100),
        )
        flush()
        size = out.tell()
        out.seek(0)
        digest = hashlib.file_digest(out, "sha256").hexdigest()
        out.seek(0)
        if pack.file:
            pack.file.delete(save=False)
        stored_name = pack.file.storage.save(f"packs/{pack.project.slug}/{pack.filename}", File(out))
    updated = Pack.objects.filter(pk=pack.pk, status=PackStatus.BUILDING).update(
        status=PackStatus.READY,
        progress=100,
        file=stored_name,
        size_bytes=size,
        sha256=digest,
        manifest=manifest,
        formats=manifest["formats"],
        error="",
        finished_at=timezone.now(),
    )
    if not updated:  # cancelled or taken over meanwhile: the file is nobody's
        pack.file.storage.delete(stored_name)


def pack_import(*, project_id: int, user: User, uploaded_file, again: bool = False) -> list:
    """The tasks of a Taskwright pack (its own format), rebuilt in the project as drafts
    on worlds imported from the pack's world zips: prompts, reference answers, rubrics and
    grading settings as they were. Admins only. The whole pack is checked first (ours,
    complete, every sha256); then it is stored in one transaction, so a refusal at any
    point leaves nothing behind. The same pack imported into the same project again is
    refused unless `again` (a second copy of every world and task is rarely what was meant:
    a reloaded result page or a second upload made silent duplicates)."""
    require_role(membership_get(user=user, project_id=project_id), "import")
    uploaded_file.seek(0)
    parsed, archive = read_pack(uploaded_file.file if hasattr(uploaded_file, "file") else uploaded_file)
    created = []
    with archive, transaction.atomic():
        # One import into a project at a time: two quick submissions of the same pack would
        # each miss the other's uncommitted audit line and both import.
        Project.objects.select_for_update().filter(pk=project_id).first()
        before = pack_import_earlier(project_id=project_id, manifest_sha256=parsed.manifest_sha256)
        if before is not None and not again:
            who = before.actor.username if before.actor else "someone"
            raise ApplicationError(
                f"This pack ({parsed.name} v{parsed.version}) was already imported into this project by {who} on "
                f"{timezone.localtime(before.at):%Y-%m-%d %H:%M}: its tasks are drafts here already. Nothing was imported; "
                "to make a second copy of every world and task, import it again with “Import again” ticked.")
        worlds = {}
        for entry in parsed.worlds:
            data = safe_member_read(archive, entry.zip_name, MAX_WORLD_ZIP_BYTES)
            world = world_import(project_id=project_id, user=user, uploaded_file=ContentFile(data, name=f"{entry.world_id}.zip"),
                                 title=entry.title)
            worlds[entry.world_id] = authoring.world_update(world=world, user=user, title=world.title, outline=entry.outline,
                                                            facts=entry.facts, base_revision=world.revision)
        for row in parsed.tasks:
            env_task = authoring.env_task_create(
                world=worlds[row["world_id"]], user=user, title=str(row.get("title") or ""), prompt=str(row.get("prompt") or ""),
                deliverable_kind=str(row.get("deliverable_kind") or "answer"), reference_answer=str(row.get("reference_answer") or ""),
            )
            rubric = row["rubric"]
            for criterion in rubric["criteria"]:
                current = env_task.rubric_versions.order_by("-number").first()
                authoring.criterion_add(
                    env_task=env_task, user=user, base_revision=current.revision, text=str(criterion.get("text") or ""),
                    points=int(criterion.get("points") or 0), tag=str(criterion.get("tag") or "important"),
                    grader_kind=str(criterion.get("grader_kind") or "llm_judge"), grader_config=criterion.get("grader_config") or {},
                    explanation=str(criterion.get("explanation") or ""),
                )
            current = env_task.rubric_versions.order_by("-number").first()
            authoring.rubric_settings_update(env_task=env_task, user=user, base_revision=current.revision,
                                             pass_threshold=float(rubric.get("pass_threshold", 0.7)),
                                             all_must_pass=bool(rubric.get("all_must_pass", False)),
                                             judge_samples=int(rubric.get("judge_samples", 1)))
            for entry in row.get("input_files") or []:
                data = safe_member_read(archive, input_file_path(str(row.get("task_id")), entry["path"]), MAX_UPLOAD_BYTES)
                task_input_file_add_bytes(env_task=env_task, user=user, path=entry["path"], data=data)
            env_task.refresh_from_db()
            created.append(env_task)
        audit_record(project_id=project_id, verb=AuditVerb.PACK_IMPORTED, actor=user,
                     summary=f"Imported the pack {parsed.name} v{parsed.version}: {len(created)} task(s) as drafts",
                     data={"manifest_sha256": parsed.manifest_sha256, "task_ids": [t.pk for t in created]})
    logger.info("Pack %s v%s imported into project %s: %d tasks", parsed.name, parsed.version, project_id, len(created))
    return created

