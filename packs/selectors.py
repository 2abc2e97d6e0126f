from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import Membership, Role, User
from packs.build import digest
from packs.models import Pack, PackStatus
from reviews.models import AuditEvent, AuditVerb, Submission
from reviews.selectors import approved_submissions_for_project


def pack_list_for_user(*, user: User | AnonymousUser, project_id: int | None = None) -> QuerySet[Pack]:
    """Packs are an admin's business: only admins of a project see its packs."""
    if not user.is_authenticated:
        return Pack.objects.none()
    admin_projects = Membership.objects.filter(user=user, role=Role.ADMIN).values("project_id")
    qs = (
        Pack.objects.filter(project_id__in=admin_projects).select_related("project", "created_by").annotate(task_count=Count("submissions"))
    )
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return qs.order_by("-created_at", "-id")  # the newest build first (an annotated query drops Meta.ordering)


def pack_get_for_user(*, user: User, pk: int) -> Pack:
    return get_object_or_404(pack_list_for_user(user=user), pk=pk)


def pack_previous_version(*, pack: Pack) -> Pack | None:
    """The version this one follows: the newest earlier pack of the same name that was built."""
    return (Pack.objects.filter(project_id=pack.project_id, name=pack.name, version__lt=pack.version, status=PackStatus.READY)
            .order_by("-version").first())


def pack_versions(*, pack: Pack) -> QuerySet[Pack]:
    return Pack.objects.filter(project_id=pack.project_id, name=pack.name).order_by("-version")


NO_INPUT_FILES = digest([])


def _part(fingerprint: dict, key: str) -> str | None:
    # A pack built before tasks had input files has no "input_files": it had none.
    return fingerprint.get(key, NO_INPUT_FILES if key == "input_files" else None)


def pack_diff(*, pack: Pack, previous: Pack) -> dict:
    """What changed since `previous`: tasks added, removed, and changed (prompt, reference
    answer, rubric, input files, world documents: which were added, removed or changed)."""
    now = {e.task_pk: e for e in pack.task_entries.all()}
    before = {e.task_pk: e for e in previous.task_entries.all()}
    worlds_now = {w.world_id: w for w in pack.world_entries.all()}
    worlds_before = {w.world_id: w for w in previous.world_entries.all()}
    labels = {"prompt": "prompt", "reference_answer": "reference answer", "rubric": "rubric", "input_files": "input files"}
    changed = []
    for task_pk in sorted(set(now) & set(before), key=lambda pk: now[pk].position):
        a, b = before[task_pk], now[task_pk]
        parts = [label for key, label in labels.items() if _part(a.fingerprint, key) != _part(b.fingerprint, key)]
        documents = {"added": [], "removed": [], "changed": []}
        if a.fingerprint.get("world") != b.fingerprint.get("world"):
            old = worlds_before[a.world_id].documents if a.world_id in worlds_before else {}
            new = worlds_now[b.world_id].documents if b.world_id in worlds_now else {}
            documents = {"added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)),
                         "changed": sorted(p for p in set(old) & set(new) if old[p] != new[p])}
            parts.append("world documents")
        if parts:
            changed.append({"task_id": b.task_id, "title": b.title, "from_version": a.version, "to_version": b.version,
                            "parts": parts, "documents": documents})
    return {
        "previous": {"id": previous.pk, "version": previous.version},
        "added": [{"task_id": now[pk].task_id, "title": now[pk].title, "version": now[pk].version}
                  for pk in sorted(set(now) - set(before), key=lambda pk: now[pk].position)],
        "removed": [{"task_id": before[pk].task_id, "title": before[pk].title, "version": before[pk].version}
                    for pk in sorted(set(before) - set(now), key=lambda pk: before[pk].position)],
        "changed": changed,
        "unchanged": len(set(now) & set(before)) - len(changed),
        "formats": {"added": [f for f in pack.formats if f not in previous.formats],
                    "removed": [f for f in previous.formats if f not in pack.formats]},
    }


def pack_format_files(*, pack: Pack, key: str) -> list[str]:
    """The files of one format in a built pack, with the worlds when the format reads
    them, and the manifest and README (what a per-format download holds)."""
    from packs.formats import FORMATS, writer_class

    contents = (pack.manifest or {}).get("contents") or {}
    if key not in FORMATS or key not in contents:
        raise Http404("This pack holds no such format.")
    paths = list(contents[key])
    if writer_class(key).needs_worlds:  # the formats that run agents: they read the worlds and the tasks' input files
        paths = list(contents.get("worlds") or []) + list(contents.get("task_files") or []) + paths
    return [*paths, "README.md", "manifest.json"]


def pack_import_earlier(*, project_id: int, manifest_sha256: str) -> AuditEvent | None:
    """The audit line of an earlier import of the same pack into the project, if any."""
    return (AuditEvent.objects.filter(project_id=project_id, verb=AuditVerb.PACK_IMPORTED, data__manifest_sha256=manifest_sha256)
            .select_related("actor").order_by("-at").first())


def approved_for_pack(*, user: User, project_id: int) -> list[Submission]:
    """The project's approved task versions, newest first, each with `newer_number`: the
    number of a newer approved version of its task, or None for the newest (a pack holds one)."""
    approved = list(approved_submissions_for_project(user=user, project_id=project_id))
    newest: dict[int, int] = {}
    for submission in approved:
        newest[submission.env_task_id] = max(newest.get(submission.env_task_id, 0), submission.number)
    for submission in approved:
        submission.newer_number = newest[submission.env_task_id] if newest[submission.env_task_id] != submission.number else None
    return approved
