from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from accounts.models import User
from authoring.models import (
    Criterion,
    CriterionTag,
    DeliverableKind,
    EnvTask,
    EnvTaskStatus,
    GraderKind,
    RubricVersion,
    World,
)
from authoring.selectors import task_input_files_frozen
from authoring.services.common import author_membership, check_revision
from core.exceptions import ApplicationError
from core.services import status_change_record
from core.validation import reject_unstorable

MAX_PROMPT_CHARS = 100_000
MAX_CRITERIA = 200

# Which lifecycle moves exist. Reviews drive in_review → approved / changes_requested.
TRANSITIONS: dict[str, set[str]] = {
    EnvTaskStatus.DRAFT: {EnvTaskStatus.IN_REVIEW, EnvTaskStatus.ARCHIVED},
    EnvTaskStatus.CHANGES_REQUESTED: {EnvTaskStatus.IN_REVIEW, EnvTaskStatus.ARCHIVED},
    # back to draft: the author withdrew the version in review (reviews.services.submission_withdraw)
    EnvTaskStatus.IN_REVIEW: {EnvTaskStatus.APPROVED, EnvTaskStatus.CHANGES_REQUESTED, EnvTaskStatus.DRAFT},
    # back to draft: the author starts a new version (env_task_start_new_version); the approved
    # version stays approved, and it is what packs hold until the next one is approved
    EnvTaskStatus.APPROVED: {EnvTaskStatus.ARCHIVED, EnvTaskStatus.DRAFT},
    EnvTaskStatus.ARCHIVED: {EnvTaskStatus.DRAFT},
}


def _clean_task_fields(*, title: str, prompt: str, deliverable_kind: str, reference_answer: str) -> dict:
    title = (title or "").strip()
    if not title:
        raise ApplicationError("A task needs a title.")
    if len(title) > 200:
        raise ApplicationError("The title is too long (200 characters at most).")
    if deliverable_kind not in DeliverableKind.values:
        raise ApplicationError(f"Unknown deliverable {deliverable_kind!r}; choose one of {', '.join(DeliverableKind.values)}.")
    if len(prompt or "") > MAX_PROMPT_CHARS or len(reference_answer or "") > MAX_PROMPT_CHARS:
        raise ApplicationError(f"The prompt and reference answer hold at most {MAX_PROMPT_CHARS:,} characters each.")
    return {"title": title, "prompt": prompt or "", "deliverable_kind": deliverable_kind, "reference_answer": reference_answer or ""}


def require_editable(env_task: EnvTask) -> None:
    """ApplicationError unless the task may be edited (draft or changes requested)."""
    if not env_task.is_editable:
        raise ApplicationError(
            f"This task is {env_task.get_status_display().lower()}: it can be edited again once it is "
            "back in draft or changes are requested."
        )


@transaction.atomic
def env_task_create(
    *, world: World, user: User, title: str, prompt: str = "", deliverable_kind: str = DeliverableKind.ANSWER,
    reference_answer: str = "",
) -> EnvTask:
    author_membership(user=user, project_id=world.project_id)
    fields = _clean_task_fields(title=title, prompt=prompt, deliverable_kind=deliverable_kind, reference_answer=reference_answer)
    env_task = EnvTask.objects.create(project_id=world.project_id, world=world, created_by=user, updated_by=user, **fields)
    RubricVersion.objects.create(env_task=env_task, number=1, created_by=user, updated_by=user)
    status_change_record(subject=env_task, project_id=env_task.project_id, actor=user, from_status="", to_status=env_task.status)
    return env_task


@transaction.atomic
def env_task_update(
    *, env_task: EnvTask, user: User, base_revision: int | None, title: str, prompt: str, deliverable_kind: str,
    reference_answer: str,
) -> EnvTask:
    author_membership(user=user, project_id=env_task.project_id)
    fields = _clean_task_fields(title=title, prompt=prompt, deliverable_kind=deliverable_kind, reference_answer=reference_answer)
    env_task = EnvTask.objects.select_for_update().get(pk=env_task.pk)
    require_editable(env_task)
    check_revision(obj=env_task, base_revision=base_revision, fields=fields, label="This task")
    for name, value in fields.items():
        setattr(env_task, name, value)
    env_task.updated_by = user
    env_task.revision = F("revision") + 1
    env_task.save(update_fields=[*fields, "updated_by", "revision", "updated_at"])
    env_task.refresh_from_db()
    return env_task


def env_task_set_status(*, env_task: EnvTask, actor, to_status: str, note: str = "") -> EnvTask:
    """Move a task along its lifecycle. Callers (this app's and reviews' services) check
    who may do it; this checks the move exists and that nobody moved the task meanwhile."""
    from_status = env_task.status
    if to_status not in TRANSITIONS.get(from_status, set()):
        raise ApplicationError(
            f"A task that is {EnvTaskStatus(from_status).label.lower()} cannot become {EnvTaskStatus(to_status).label.lower()}."
        )
    moved = EnvTask.objects.filter(pk=env_task.pk, status=from_status).update(status=to_status, updated_at=timezone.now())
    if not moved:
        raise ApplicationError("This task's status changed meanwhile; reload the page.")
    env_task.status = to_status
    status_change_record(
        subject=env_task, project_id=env_task.project_id, actor=actor, from_status=from_status, to_status=to_status, note=note
    )
    return env_task


@transaction.atomic
def env_task_start_new_version(*, env_task: EnvTask, user: User) -> EnvTask:
    """An approved task back to draft, so its author can change it and submit the next
    version. Its approved version stays approved and frozen: packs keep holding it (Build
    again picks the newest approved version) until the next one is approved."""
    author_membership(user=user, project_id=env_task.project_id)
    if env_task.status != EnvTaskStatus.APPROVED:
        raise ApplicationError("Only an approved task starts a new version; this one can be edited as it is.")
    return env_task_set_status(env_task=env_task, actor=user, to_status=EnvTaskStatus.DRAFT,
                               note="Started a new version; the approved one stays in packs")


# --- Rubric ---------------------------------------------------------------------------

def rubric_version_freeze(*, rubric_version: RubricVersion) -> RubricVersion:
    if rubric_version.frozen_at is None:
        RubricVersion.objects.filter(pk=rubric_version.pk, frozen_at__isnull=True).update(frozen_at=timezone.now())
        rubric_version.refresh_from_db(fields=["frozen_at"])
    return rubric_version


def rubric_version_editable(*, env_task: EnvTask, user: User) -> RubricVersion:
    """The version edits go to: the latest one while it is unfrozen, else a new copy of it.
    A frozen version (submitted or used to grade) never changes."""
    current = env_task.rubric_versions.select_for_update().order_by("-number").first()
    if current is not None and not current.is_frozen:
        return current
    number = (env_task.rubric_versions.aggregate(n=Max("number"))["n"] or 0) + 1
    fresh = RubricVersion.objects.create(
        env_task=env_task, number=number, created_by=user, updated_by=user,
        **({} if current is None else {f: getattr(current, f) for f in ("pass_threshold", "all_must_pass", "judge_samples")}),
    )
    if current is not None:
        Criterion.objects.bulk_create(
            Criterion(rubric_version=fresh, position=c.position, **c.as_dict()) for c in current.criteria.all()
        )
    return fresh


def _clean_criterion(*, text: str, points: object, tag: str, grader_kind: str, grader_config: object, explanation: str) -> dict:
    text = (text or "").strip()
    if not text:
        raise ApplicationError("A criterion needs text: what must (or must not) be in the answer.")
    if len(text) > 5_000 or len(explanation or "") > 5_000:
        raise ApplicationError("Criterion text and explanation hold at most 5,000 characters each.")
    try:
        points = int(points)
    except (TypeError, ValueError):
        raise ApplicationError("Points must be a whole number (negative for a penalty).") from None
    if not -100 <= points <= 100 or points == 0:
        raise ApplicationError("Points must be between -100 and 100, and not zero.")
    if tag not in CriterionTag.values:
        raise ApplicationError(f"Unknown tag {tag!r}; choose one of {', '.join(CriterionTag.values)}.")
    if points < 0 and tag == CriterionTag.IMPORTANT:
        tag = CriterionTag.PITFALL  # a penalty left with the default tag is a pitfall
    if tag == CriterionTag.PITFALL and points > 0:
        raise ApplicationError("A pitfall describes something bad: give it negative points.")
    if grader_kind not in GraderKind.values:
        raise ApplicationError(f"Unknown grader {grader_kind!r}.")
    if not isinstance(grader_config, dict):
        raise ApplicationError("Grader settings must be an object.")
    reject_unstorable(grader_config, label="The grader settings")
    return {
        "text": text,
        "points": points,
        "tag": tag,
        "grader_kind": grader_kind,
        "grader_config": grader_config,
        "explanation": explanation or "",
    }


def _clean_evidence(evidence: object) -> dict:
    """A reference to the trajectory step a criterion was made from: ids and a label only."""
    if not evidence:
        return {}
    if not isinstance(evidence, dict):
        raise ApplicationError("Evidence must be an object.")
    cleaned = {}
    for key in ("step", "rollout", "batch"):
        if evidence.get(key) not in (None, ""):
            try:
                cleaned[key] = int(evidence[key])
            except (TypeError, ValueError):
                raise ApplicationError(f"Evidence {key} must be an id.") from None
    label = str(evidence.get("label", ""))[:200]
    reject_unstorable(label, label="The evidence label")
    if label:
        cleaned["label"] = label
    return cleaned


def _rubric_for_edit(*, env_task: EnvTask, user: User, base_revision: int | None) -> RubricVersion:
    author_membership(user=user, project_id=env_task.project_id)
    env_task = EnvTask.objects.select_for_update().get(pk=env_task.pk)
    require_editable(env_task)
    current = env_task.rubric_versions.order_by("-number").first()
    if current is not None:
        check_revision(obj=current, base_revision=base_revision, fields={}, label="The rubric")
    rubric = rubric_version_editable(env_task=env_task, user=user)
    return rubric


def _touch(rubric: RubricVersion, user: User) -> RubricVersion:
    RubricVersion.objects.filter(pk=rubric.pk).update(revision=F("revision") + 1, updated_by=user, updated_at=timezone.now())
    rubric.refresh_from_db()
    return rubric


@transaction.atomic
def criterion_add(
    *, env_task: EnvTask, user: User, base_revision: int | None, text: str, points: int = 1,
    tag: str = CriterionTag.IMPORTANT, grader_kind: str = GraderKind.LLM_JUDGE,
    grader_config: dict | None = None, explanation: str = "", evidence: dict | None = None,
) -> Criterion:
    rubric = _rubric_for_edit(env_task=env_task, user=user, base_revision=base_revision)
    fields = _clean_criterion(
        text=text, points=points, tag=tag, grader_kind=grader_kind, grader_config=grader_config or {}, explanation=explanation
    )
    fields["evidence"] = _clean_evidence(evidence)
    if rubric.criteria.count() >= MAX_CRITERIA:
        raise ApplicationError(f"A rubric holds at most {MAX_CRITERIA} criteria.")
    position = (rubric.criteria.aggregate(p=Max("position"))["p"] or 0) + 1
    criterion = Criterion.objects.create(rubric_version=rubric, position=position, **fields)
    _touch(rubric, user)
    return criterion


def _criterion_in(rubric: RubricVersion, criterion: Criterion) -> Criterion:
    """The same criterion in the version being edited (it may be a fresh copy)."""
    if criterion.rubric_version_id == rubric.pk:
        return criterion
    match = rubric.criteria.filter(position=criterion.position, text=criterion.text).first()
    if match is None:
        raise ApplicationError("That criterion is no longer in the rubric; reload the page.")
    return match


@transaction.atomic
def criterion_update(
    *, criterion: Criterion, user: User, base_revision: int | None, text: str, points: int, tag: str,
    grader_kind: str = GraderKind.LLM_JUDGE, grader_config: dict | None = None, explanation: str = "",
) -> Criterion:
    rubric = _rubric_for_edit(env_task=criterion.rubric_version.env_task, user=user, base_revision=base_revision)
    criterion = _criterion_in(rubric, criterion)
    fields = _clean_criterion(
        text=text, points=points, tag=tag, grader_kind=grader_kind, grader_config=grader_config or {}, explanation=explanation
    )
    for name, value in fields.items():
        setattr(criterion, name, value)
    criterion.save(update_fields=list(fields))
    _touch(rubric, user)
    return criterion


@transaction.atomic
def criterion_delete(*, criterion: Criterion, user: User, base_revision: int | None) -> RubricVersion:
    rubric = _rubric_for_edit(env_task=criterion.rubric_version.env_task, user=user, base_revision=base_revision)
    _criterion_in(rubric, criterion).delete()
    return _touch(rubric, user)


@transaction.atomic
def criterion_move(*, criterion: Criterion, user: User, base_revision: int | None, direction: str) -> RubricVersion:
    if direction not in ("up", "down"):
        raise ApplicationError("Move a criterion 'up' or 'down'.")
    rubric = _rubric_for_edit(env_task=criterion.rubric_version.env_task, user=user, base_revision=base_revision)
    criterion = _criterion_in(rubric, criterion)
    siblings = list(rubric.criteria.order_by("position", "id"))
    index = next(i for i, c in enumerate(siblings) if c.pk == criterion.pk)
    other = index - 1 if direction == "up" else index + 1
    if 0 <= other < len(siblings):
        siblings[index], siblings[other] = siblings[other], siblings[index]
    for position, sibling in enumerate(siblings, start=1):
        if sibling.position != position:
            Criterion.objects.filter(pk=sibling.pk).update(position=position)
    return _touch(rubric, user)


MAX_JUDGE_SAMPLES = 9


def _clean_grading_settings(*, pass_threshold: object, all_must_pass: object, judge_samples: object) -> dict:
    try:
        threshold = float(pass_threshold)
    except (TypeError, ValueError):
        raise ApplicationError("The pass threshold must be a number between 0 and 1.") from None
    if not 0 <= threshold <= 1:  # also refuses NaN
        raise ApplicationError("The pass threshold must be between 0 and 1 (a score at or above it passes).")
    try:
        samples = int(judge_samples)
    except (TypeError, ValueError):
        raise ApplicationError("Judge samples must be a whole number.") from None
    if not 1 <= samples <= MAX_JUDGE_SAMPLES:
        raise ApplicationError(
            f"Judge samples must be between 1 and {MAX_JUDGE_SAMPLES} (an odd number avoids ties; a tie counts as not met)."
        )
    if not isinstance(all_must_pass, bool):
        raise ApplicationError("All-must-pass is either on or off.")
    return {"pass_threshold": round(threshold, 4), "all_must_pass": all_must_pass, "judge_samples": samples}


@transaction.atomic
def rubric_settings_update(
    *, env_task: EnvTask, user: User, base_revision: int | None, pass_threshold: float, all_must_pass: bool, judge_samples: int,
) -> RubricVersion:
    """How the rubric turns verdicts into a grade. Versioned with the criteria: changing a
    frozen version's settings starts a new version, as a criterion edit does. Saving the
    settings unchanged changes nothing (and makes no version)."""
    fields = _clean_grading_settings(pass_threshold=pass_threshold, all_must_pass=all_must_pass, judge_samples=judge_samples)
    author_membership(user=user, project_id=env_task.project_id)
    current = env_task.rubric_versions.order_by("-number").first()
    if current is not None and all(getattr(current, name) == value for name, value in fields.items()):
        check_revision(obj=current, base_revision=base_revision, fields={}, label="The rubric")
        return current
    rubric = _rubric_for_edit(env_task=env_task, user=user, base_revision=base_revision)
    for name, value in fields.items():
        setattr(rubric, name, value)
    rubric.save(update_fields=list(fields))
    return _touch(rubric, user)


def env_task_snapshot(*, env_task: EnvTask, rubric_version: RubricVersion) -> dict:
    """Everything a reviewer and a pack need, frozen: the task, its rubric and its world."""
    world = env_task.world
    return {
        "task": {
            "id": env_task.pk,
            "title": env_task.title,
            "prompt": env_task.prompt,
            "deliverable_kind": env_task.deliverable_kind,
            "reference_answer": env_task.reference_answer,
            # By sha256: the bytes stay in storage (authoring.services.task_files).
            "input_files": task_input_files_frozen(env_task=env_task),
        },
        "rubric": {
            "version": rubric_version.number,
            "criteria": [c.as_dict() for c in rubric_version.criteria.all()],
        },
        "world": {
            "id": world.pk,
            "title": world.title,
            "outline": world.outline,
            "facts": world.facts,
            "documents": [
                {
                    "path": d.path,
                    "kind": d.kind,
                    "format": d.format,
                    "brief": d.brief,
                    "metadata": d.metadata,
                    "target_size": d.target_size,
                    "content": d.content,
                    "status": d.status,
                }
                for d in world.documents.all()
            ],
        },
    }
