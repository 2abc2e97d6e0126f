"""Reads with access rules: every world, document, task and rubric is reached through
its project's membership. An object of a project the user is not in is a 404."""

from django.core.files.storage import default_storage
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.models import User
from accounts.selectors import project_list_for_user
from authoring.models import (
    Criterion,
    Document,
    DocumentVersion,
    DraftJob,
    DraftRun,
    EnvTask,
    EnvTaskStatus,
    RubricVersion,
    SkeletonProposal,
    TaskInputFile,
    World,
)


def world_list_for_user(*, user: User, project_id: int | None = None) -> QuerySet[World]:
    qs = World.objects.filter(project__in=project_list_for_user(user=user))
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return qs.select_related("project").annotate(document_count=Count("documents"))


def world_get_for_user(*, user: User, pk: int) -> World:
    return get_object_or_404(World.objects.filter(project__in=project_list_for_user(user=user)).select_related("project"), pk=pk)


def document_list_for_user(*, user: User, world_id: int | None = None) -> QuerySet[Document]:
    qs = Document.objects.filter(world__project__in=project_list_for_user(user=user))
    if world_id is not None:
        qs = qs.filter(world_id=world_id)
    return qs.select_related("world", "world__project")


def document_get_for_user(*, user: User, pk: int) -> Document:
    return get_object_or_404(document_list_for_user(user=user), pk=pk)


def env_task_list_for_user(*, user: User, project_id: int | None = None, status: str | None = None) -> QuerySet[EnvTask]:
    qs = EnvTask.objects.filter(project__in=project_list_for_user(user=user)).select_related("project", "world", "created_by")
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    if status:
        qs = qs.filter(status=status)
    return qs


# What a list of tasks shows: never the prompt, the reference answer, the world's outline or
# whole user rows (a page of 50 tasks read 200 kB it did not show).
ENV_TASK_ROW_FIELDS = ("id", "project_id", "world_id", "title", "deliverable_kind", "status", "revision", "created_at", "updated_at")


def env_tasks_in_project(*, user: User, project_id: int, ids: list[int]) -> list[EnvTask]:
    """These tasks of the project, those the user may see, in the order of `ids`."""
    found = {t.pk: t for t in env_task_list_for_user(user=user, project_id=project_id).filter(pk__in=ids).select_related("world")}
    return [found[pk] for pk in ids if pk in found]


def env_task_rows_for_user(
    *, user: User, project_id: int | None = None, status: str | None = None, related: tuple[str, ...] = ()
) -> QuerySet[EnvTask]:
    """The tasks of the user's projects as list rows: ENV_TASK_ROW_FIELDS, plus the `title` or
    `name`, `title` or `username` of each relation named in `related` ("project", "world",
    "created_by", "updated_by").
    The user's projects are read first, as ids: filtered by a subquery, PostgreSQL sorted
    the whole project for every page; by a constant it reads the (project, updated_at, id)
    index in order and stops after the page."""
    project_ids = list(project_list_for_user(user=user).values_list("pk", flat=True))
    if project_id is not None:
        project_ids = [pk for pk in project_ids if pk == project_id]
    shown = {"project": "name", "world": "title", "created_by": "username", "updated_by": "username"}
    qs = (EnvTask.objects.filter(project_id__in=project_ids).select_related(*related)
          .only(*ENV_TASK_ROW_FIELDS, *(f"{name}__{shown[name]}" for name in related)))
    return qs.filter(status=status) if status else qs


def env_task_get_for_user(*, user: User, pk: int) -> EnvTask:
    return get_object_or_404(env_task_list_for_user(user=user), pk=pk)


def task_input_file_list_for_user(*, user: User, env_task_id: int | None = None) -> QuerySet[TaskInputFile]:
    """Input files of the tasks in the user's projects (without `content`, the agent's
    text of each file: lists never show it)."""
    qs = TaskInputFile.objects.filter(env_task__project__in=project_list_for_user(user=user)).defer("content")
    if env_task_id is not None:
        qs = qs.filter(env_task_id=env_task_id)
    return qs.select_related("env_task", "created_by")


def task_input_files_frozen(*, env_task: EnvTask) -> list[dict]:
    """What a frozen task version (a submission, a trial batch) keeps of the task's input
    files, by path: {path, size, sha256}; the bytes stay in storage by sha256. Reads
    neither the bytes nor the extracted text."""
    return list(env_task.input_files.order_by("path", "id").values("path", "size", "sha256"))


def task_input_file_get_for_user(*, user: User, pk: int) -> TaskInputFile:
    return get_object_or_404(task_input_file_list_for_user(user=user), pk=pk)


def task_input_file_download(*, input_file: TaskInputFile) -> tuple[bytes, str]:
    """The file's bytes as uploaded and its name, for a download (pages and API): a 404
    when the bytes went missing from storage behind our back."""
    try:
        with input_file.file.open("rb") as handle:
            return handle.read(), input_file.path.rpartition("/")[2]
    except FileNotFoundError:
        raise Http404("This input file is missing from storage.") from None


def task_input_files_with_text(*, env_task_id: int, frozen: list[dict]) -> list[dict]:
    """A frozen version's input files ({path, size, sha256}), each with the text the agent's
    tools read from it while the task still holds those bytes ("" once it does not): one query."""
    texts = dict(TaskInputFile.objects.filter(env_task_id=env_task_id, sha256__in=[f["sha256"] for f in frozen])
                 .values_list("sha256", "content"))
    return [{**f, "text": texts.get(f["sha256"], "")} for f in frozen]


def task_input_file_frozen_download(*, entry: dict) -> tuple[bytes, str]:
    """A frozen input file's bytes ({path, sha256}: stored once by sha256, never changed) and
    its name, for a download: a 404 when they went missing from storage."""
    from authoring.services.task_files import task_file_name  # (the services import these selectors)

    try:
        with default_storage.open(task_file_name(entry["sha256"]), "rb") as handle:
            return handle.read(), entry["path"].rpartition("/")[2]
    except OSError:
        raise Http404("This input file is missing from storage.") from None


def env_task_drafts_for_author(*, user: User) -> QuerySet[EnvTask]:
    """The user's own tasks that are waiting on the user: drafts and sent-back ones (as list
    rows, newest first: the (created_by, updated_at, id) index)."""
    return env_task_rows_for_user(user=user, related=("project",)).filter(
        created_by=user, status__in=[EnvTaskStatus.DRAFT, EnvTaskStatus.CHANGES_REQUESTED]
    )


def env_task_counts_for_user(*, user: User) -> dict[str, int]:
    counts = env_task_list_for_user(user=user).aggregate(
        **{status: Count("id", filter=Q(status=status)) for status in EnvTaskStatus.values}
    )
    return counts


def approved_version_number(*, env_task: EnvTask) -> int | None:
    """The number of the task's newest approved version (what packs hold), None if none is.
    (Read through the reviews app's reverse relation: a submission approved is "approved".)"""
    return env_task.submissions.filter(status="approved").aggregate(number=Max("number"))["number"]


def rubric_version_current(*, env_task: EnvTask) -> RubricVersion | None:
    return env_task.rubric_versions.order_by("-number").first()


def rubric_version_get_for_user(*, user: User, pk: int) -> RubricVersion:
    return get_object_or_404(
        RubricVersion.objects.filter(env_task__project__in=project_list_for_user(user=user)).select_related("env_task"),
        pk=pk,
    )


def world_tree(*, world: World) -> list[dict]:
    """The data room as folders of documents, in position order, for the tree view."""
    folders: dict[str, list[Document]] = {}
    for document in world.documents.all():
        folders.setdefault(document.folder, []).append(document)
    return [{"folder": folder, "documents": docs} for folder, docs in sorted(folders.items())]


def criterion_get_for_user(*, user: User, pk: int) -> Criterion:
    return get_object_or_404(
        Criterion.objects.filter(rubric_version__env_task__project__in=project_list_for_user(user=user)).select_related(
            "rubric_version", "rubric_version__env_task"
        ),
        pk=pk,
    )


def rubric_summary(*, rubric_version: RubricVersion | None) -> dict:
    criteria = list(rubric_version.criteria.all()) if rubric_version else []
    return {
        "rubric": rubric_version,
        "criteria": criteria,
        "positive_points": sum(c.points for c in criteria if c.points > 0),
        "penalty_points": sum(c.points for c in criteria if c.points < 0),
    }


def world_consistency_report(*, world: World):
    """The consistency check of a world's documents against its facts sheet (a
    consistency.Report). The caller has already been given the world by a scoped selector."""
    from authoring.consistency import check

    documents = [
        (d.pk, d.path, "\n\n".join(x for x in [str(d.metadata.get("subject") or ""), d.content] if x))
        for d in world.documents.only("pk", "path", "content", "metadata", "position")
    ]
    return check(world.facts, documents)


def document_version_get_for_user(*, user: User, pk: int):
    return get_object_or_404(
        DocumentVersion.objects.filter(document__world__project__in=project_list_for_user(user=user)).select_related(
            "document", "document__world"
        ),
        pk=pk,
    )


def draft_run_latest(*, world: World):
    """The run the drafting panel follows: the newest with work still open (a retried job
    reopens an older run), else the newest."""
    runs = world.draft_runs.select_related("endpoint")
    return runs.filter(jobs__status__in=["queued", "running"]).distinct().first() or runs.first()


def draft_run_get_for_user(*, user: User, pk: int):
    return get_object_or_404(DraftRun.objects.filter(world__project__in=project_list_for_user(user=user)).select_related("world"), pk=pk)


def draft_job_get_for_user(*, user: User, pk: int):
    return get_object_or_404(
        DraftJob.objects.filter(run__world__project__in=project_list_for_user(user=user)).select_related("run", "run__world", "document"),
        pk=pk,
    )


def skeleton_proposal_latest(*, world: World):
    return world.skeleton_proposals.first()


def skeleton_proposal_get_for_user(*, user: User, pk: int):
    return get_object_or_404(
        SkeletonProposal.objects.filter(world__project__in=project_list_for_user(user=user)).select_related("world"), pk=pk
    )


def document_draft_states(*, world_id: int) -> dict[int, DraftJob]:
    """{document id: its last draft job} for the documents whose last job did not end
    well or is still open (failed, cancelled, queued, drafting), for the data room's
    status cell. A failure older than the document's last change (edited by hand since)
    is no longer news and is left out. One query, whatever the size of the room."""
    from django.db.models import F, OuterRef, Subquery

    from authoring.models import DraftJobStatus

    last = DraftJob.objects.filter(document=OuterRef("pk")).order_by("-id").values("id")[:1]
    last_ids = Document.objects.filter(world_id=world_id).annotate(last_job=Subquery(last)).values("last_job")
    jobs = DraftJob.objects.filter(pk__in=last_ids).exclude(status=DraftJobStatus.DONE).annotate(changed_at=F("document__updated_at"))
    return {job.document_id: job for job in jobs if job.finished_at is None or job.finished_at >= job.changed_at}
