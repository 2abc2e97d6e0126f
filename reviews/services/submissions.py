"""A submission's life: submitted (behind the project's gates), claimed, reviewed by as
many distinct reviewers as the policy asks, adjudicated by an admin when they disagree,
approved or sent back; or withdrawn by its author. Every transition is one transaction,
checks the state it starts from, and writes its line of the audit trail."""

import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring import render_check
from authoring.archipelago.cache import stored_world_zips
from authoring.models import EnvTask, EnvTaskStatus
from authoring.render_check import refuse_unrenderable, world_documents
from authoring.selectors import rubric_version_current
from authoring.services import env_task_set_status, env_task_snapshot, rubric_version_freeze
from core.exceptions import ApplicationError, PermissionRefused
from core.services import status_change_record
from reviews.models import (
    Adjudication,
    AuditVerb,
    ChecklistAnswer,
    Decision,
    ProbeExplanation,
    Review,
    Submission,
    SubmissionStatus,
)
from reviews.selectors.gates import submit_gates, unexplained_probes
from reviews.selectors.policy import checklist_items, review_policy_for_project
from reviews.selectors.queue import claim_cutoff, review_claimed_by_user, review_queue_for_user
from reviews.services.audit import audit_record
from reviews.services.notifications import notify, project_admins, project_reviewers
from reviews.services.policy import checklist_ensure
from reviews.tasks import render_approved_world
from rollouts.models import ProbeAnswer

logger = logging.getLogger(__name__)

MAX_TEXT = 20_000


@dataclass(frozen=True)
class ChecklistMark:
    item_id: int
    passed: bool
    note: str = ""


def _text(value: str, what: str) -> str:
    value = (value or "").strip()
    if len(value) > MAX_TEXT:
        raise ApplicationError(f"The {what} is too long (20,000 characters at most).")
    return value


def _transition(submission: Submission, actor: User, to_status: str, note: str = "", **fields) -> None:
    from_status = submission.status
    Submission.objects.filter(pk=submission.pk).update(status=to_status, updated_at=timezone.now(), **fields)
    submission.status = to_status
    for name, value in fields.items():
        setattr(submission, name, value)
    status_change_record(subject=submission, project_id=submission.project_id, actor=actor, from_status=from_status,
                         to_status=to_status, note=note)


def _link(submission: Submission) -> str:
    return reverse("submission-review", args=[submission.pk])


@transaction.atomic
def submission_create(*, env_task: EnvTask, user: User, note: str = "") -> Submission:
    """Freeze the task's current prompt, rubric and world into a new immutable version and
    put it in the review queue, if the project's gates allow."""
    membership = membership_get(user=user, project_id=env_task.project_id)
    require_role(membership, "author")
    note = _text(note, "note for the reviewers")
    env_task = EnvTask.objects.select_for_update().select_related("world").get(pk=env_task.pk)
    if env_task.status not in EnvTask.EDITABLE_STATUSES:
        raise ApplicationError(f"This task is {env_task.get_status_display().lower()} and cannot be submitted now.")
    rubric = rubric_version_current(env_task=env_task)
    problems = []
    if not env_task.prompt.strip():
        problems.append("write the prompt")
    if rubric is None or not rubric.criteria.exists():
        problems.append("add at least one rubric criterion")
    elif not rubric.criteria.filter(points__gt=0).exists():
        problems.append("give at least one criterion positive points")
    if problems:
        raise ApplicationError("Before submitting, " + " and ".join(problems) + ".")
    # A document that cannot be built into its file could not be downloaded, run or packed.
    refuse_unrenderable(world_documents(env_task.world), lead=render_check.SUBMIT_LEAD)
    policy = review_policy_for_project(project_id=env_task.project_id)
    blocked = [gate for gate in submit_gates(env_task=env_task, rubric_version=rubric, policy=policy) if not gate.passed]
    if blocked:
        raise ApplicationError(
            "Not yet: " + " ".join(f"{gate.name} — {gate.measured}. {gate.fix}" for gate in blocked),
            extra={"gates": [{"gate": g.key, "name": g.name, "measured": g.measured, "fix": g.fix} for g in blocked]},
        )
    checklist_ensure(project_id=env_task.project_id)
    rubric_version_freeze(rubric_version=rubric)
    number = (env_task.submissions.aggregate(n=Max("number"))["n"] or 0) + 1
    submission = Submission.objects.create(
        project_id=env_task.project_id, env_task=env_task, number=number, title=env_task.title, author_note=note,
        approvals_required=policy.approvals_required, rubric_version=rubric,
        snapshot=env_task_snapshot(env_task=env_task, rubric_version=rubric), submitted_by=user,
    )
    status_change_record(subject=submission, project_id=submission.project_id, actor=user, from_status="", to_status=submission.status)
    env_task_set_status(env_task=env_task, actor=user, to_status=EnvTaskStatus.IN_REVIEW, note=f"Submitted version {number}")
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.SUBMITTED,
                 summary=f"Submitted version {number} (rubric version {rubric.number})" + (f": {note[:200]}" if note else ""),
                 data={"number": number, "rubric_version": rubric.number, "note": note})
    _alert_long_queue(submission)
    return submission


def _alert_long_queue(submission: Submission) -> None:
    """Tell the project's reviewers once, when the queue reaches the policy's threshold."""
    threshold = review_policy_for_project(project_id=submission.project_id).queue_alert_threshold
    if not threshold:
        return
    waiting = Submission.objects.filter(project_id=submission.project_id, status=SubmissionStatus.QUEUED).count()
    if waiting == threshold:
        notify(recipients=project_reviewers(project_id=submission.project_id, exclude=[submission.submitted_by_id]),
               project_id=submission.project_id, url=reverse("review-queue"),
               text=f"{waiting} submissions are waiting for review in {submission.project.name}.")


@transaction.atomic
def submission_withdraw(*, submission: Submission, user: User) -> Submission:
    """The author takes an open version back to edit it; its reviews so far stay on record."""
    require_role(membership_get(user=user, project_id=submission.project_id), "author")
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    if submission.status not in Submission.OPEN_STATUSES:
        raise ApplicationError(f"Version {submission.number} is {submission.get_status_display().lower()}: only a version still "
                               "in review can be withdrawn.")
    _transition(submission, user, SubmissionStatus.WITHDRAWN, claimed_by=None, claimed_at=None)
    env_task_set_status(env_task=submission.env_task, actor=user, to_status=EnvTaskStatus.DRAFT,
                        note=f"Withdrew version {submission.number}")
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.WITHDRAWN,
                 summary=f"Withdrew version {submission.number}")
    return submission


def submission_claim_next(*, user: User) -> Submission | None:
    """Give the reviewer the oldest item they may claim that nobody else holds.

    The claim is a conditional UPDATE (claimable → claimed by me): of two reviewers racing
    for the same row exactly one update matches, the other moves on to the next row. A
    claim older than REVIEW_CLAIM_TIMEOUT_HOURS counts as given back. A reviewer already
    holding an item gets that item back instead of a second one.
    """
    held = review_claimed_by_user(user=user).order_by("claimed_at").first()
    if held is not None:
        return held
    for candidate_id, status, previous in review_queue_for_user(user=user).values_list("id", "status", "claimed_by_id")[:50]:
        with transaction.atomic():
            claimable = Submission.objects.filter(pk=candidate_id, status=status, claimed_by_id=previous)
            if status == SubmissionStatus.CLAIMED:
                claimable = claimable.filter(claimed_at__lt=claim_cutoff())
            if claimable.update(status=SubmissionStatus.CLAIMED, claimed_by=user, claimed_at=timezone.now()):
                submission = Submission.objects.get(pk=candidate_id)
                status_change_record(subject=submission, project_id=submission.project_id, actor=user, from_status=status,
                                     to_status=SubmissionStatus.CLAIMED)
                if status == SubmissionStatus.CLAIMED:
                    audit_record(project_id=submission.project_id, submission=submission, actor=None, verb=AuditVerb.CLAIM_EXPIRED,
                                 summary=f"An unfinished claim on version {submission.number} lapsed", data={"claimed_by": previous})
                audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.CLAIMED,
                             summary=f"Claimed version {submission.number} for review")
                return submission
    return None


@transaction.atomic
def submission_release(*, submission: Submission, user: User) -> Submission:
    """Hand a claimed item back to the queue (the reviewer cannot finish it)."""
    require_role(membership_get(user=user, project_id=submission.project_id), "review")
    released = Submission.objects.filter(pk=submission.pk, status=SubmissionStatus.CLAIMED, claimed_by=user).update(
        status=SubmissionStatus.QUEUED, claimed_by=None, claimed_at=None
    )
    if not released:
        raise ApplicationError("You are not reviewing this submission.")
    submission.refresh_from_db()
    status_change_record(subject=submission, project_id=submission.project_id, actor=user, from_status=SubmissionStatus.CLAIMED,
                         to_status=SubmissionStatus.QUEUED)
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.RELEASED,
                 summary=f"Put version {submission.number} back in the queue")
    return submission


def _clean_checklist(project_id: int, marks: list[ChecklistMark] | None) -> list[tuple]:
    items = checklist_items(project_id=project_id)
    given = {m.item_id: m for m in marks or []}
    unknown = set(given) - {item.pk for item in items}
    if unknown:
        raise ApplicationError("The checklist has changed since you opened it: reload the page and answer it again.")
    missing = [item.text for item in items if item.pk not in given]
    if missing:
        raise ApplicationError("Answer every checklist item before deciding. Not answered: " + "; ".join(missing) + ".")
    return [(item, given[item.pk].passed, _text(given[item.pk].note, "checklist note")) for item in items]


def _locked_claim(submission: Submission, user: User) -> Submission:
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    if submission.status == SubmissionStatus.WITHDRAWN:
        raise ApplicationError(f"The author withdrew version {submission.number}: there is nothing to decide. Nothing was saved.")
    if submission.status != SubmissionStatus.CLAIMED or submission.claimed_by_id != user.pk:
        if not submission.audit_events.filter(verb=AuditVerb.CLAIMED, actor=user).exists():
            raise ApplicationError("Claim this submission from the review queue before deciding on it.")
        raise ApplicationError("Your claim on this submission has ended (it was put back in the queue, or another reviewer took it "
                               "after your claim lapsed). Claim it from the review queue to decide on it. Nothing was saved.")
    return submission


@transaction.atomic
def review_decide(*, submission: Submission, user: User, decision: str, comment: str = "",
                  checklist: list[ChecklistMark] | None = None) -> Review:
    """One reviewer's decision with their checklist. The submission is final once the policy's
    number of distinct reviewers have decided: approved or sent back when they agree, sent to
    an admin when they do not; until then it goes back to the queue for the next reviewer."""
    membership = membership_get(user=user, project_id=submission.project_id)
    require_role(membership, "review")
    if submission.submitted_by_id == user.pk:
        raise PermissionRefused("You submitted this task: someone else must review it.")
    if decision not in Decision.values:
        raise ApplicationError("Choose 'approve' or 'request changes'.")
    comment = _text(comment, "comment")
    checklist_ensure(project_id=submission.project_id)
    answers = _clean_checklist(submission.project_id, checklist)
    failed = [item.text for item, passed, _ in answers if not passed]
    if decision == Decision.REQUEST_CHANGES and not comment and not failed:
        raise ApplicationError("Say what needs to change: fail a checklist item or write a comment for the author.")
    if decision == Decision.APPROVE:  # the frozen world must build into files, or the pack would stop on it
        refuse_unrenderable(submission.snapshot.get("world", {}).get("documents", []), lead=render_check.APPROVE_LEAD)
    submission = _locked_claim(submission, user)
    review = Review.objects.create(submission=submission, reviewer=user, decision=decision, comment=comment,
                                   claimed_at=submission.claimed_at)
    ChecklistAnswer.objects.bulk_create([ChecklistAnswer(review=review, item=item, item_text=item.text, passed=passed, note=note)
                                         for item, passed, note in answers])
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.CHECKLIST,
                 summary=f"Checklist on version {submission.number}: {len(answers) - len(failed)} pass, {len(failed)} fail"
                 + (f" ({'; '.join(failed)})" if failed else ""),
                 data={"answers": [{"item": item.text, "passed": passed, "note": note} for item, passed, note in answers]})
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.REVIEWED,
                 summary=f"{review.decision_done} on version {submission.number}" + (f": {comment[:200]}" if comment else ""),
                 data={"decision": decision, "comment": comment})
    decisions = list(submission.reviews.values_list("decision", flat=True))
    if len(decisions) < submission.approvals_required:
        _transition(submission, user, SubmissionStatus.QUEUED, note=f"Review {len(decisions)} of {submission.approvals_required}",
                    claimed_by=None, claimed_at=None)
    elif len(set(decisions)) > 1:
        _transition(submission, user, SubmissionStatus.ADJUDICATION, note="The reviewers disagree", claimed_by=None, claimed_at=None)
        audit_record(project_id=submission.project_id, submission=submission, actor=None, verb=AuditVerb.ADJUDICATION_NEEDED,
                     summary=f"The reviewers of version {submission.number} disagree: an admin decides")
        notify(recipients=project_admins(project_id=submission.project_id, exclude=[submission.submitted_by_id]),
               project_id=submission.project_id, url=_link(submission),
               text=f"Reviewers disagree on “{submission.title}” v{submission.number}: your decision is needed.")
    else:
        _finish(submission, user, decision, comment)
    return review


def _finish(submission: Submission, actor: User, decision: str, note: str) -> None:
    approved = decision == Decision.APPROVE
    _transition(submission, actor, SubmissionStatus.APPROVED if approved else SubmissionStatus.CHANGES_REQUESTED, note=note,
                claimed_by=None, claimed_at=None)
    env_task_set_status(env_task=submission.env_task, actor=actor,
                        to_status=EnvTaskStatus.APPROVED if approved else EnvTaskStatus.CHANGES_REQUESTED, note=note)
    audit_record(project_id=submission.project_id, submission=submission, actor=actor,
                 verb=AuditVerb.APPROVED if approved else AuditVerb.CHANGES_REQUESTED,
                 summary=f"Version {submission.number} {'approved' if approved else 'sent back with changes requested'}")
    notify(recipients=[submission.submitted_by], project_id=submission.project_id, url=_link(submission),
           text=f"“{submission.title}” v{submission.number}: {'approved' if approved else 'changes requested'}.")
    if approved:  # (robust: a broker that is away only leaves the rendering to the first pack build)
        transaction.on_commit(lambda: render_approved_world.delay(submission.pk), robust=True)


def submission_world_render(*, submission_id: int) -> None:
    """Render the world state an approved version was frozen with into the shared world zips
    (authoring.archipelago.cache), so the first pack that holds it copies the zip instead of
    rendering every document while the admin waits. Safe to run again: a kept state is found,
    not rendered twice. A world that does not render is left to the pack build, which names
    the document (approval already refuses one)."""
    world = Submission.objects.filter(pk=submission_id, status=SubmissionStatus.APPROVED).values_list("snapshot__world", flat=True).first()
    if world is None:
        return
    try:
        stored_world_zips().get_or_render(world)
    except ApplicationError as exc:
        logger.info("the world of submission %s was not rendered ahead: %s", submission_id, exc.message)


@transaction.atomic
def submission_adjudicate(*, submission: Submission, user: User, decision: str, note: str) -> Adjudication:
    """An admin settles a disagreement, with both reviews in view; the note says why."""
    require_role(membership_get(user=user, project_id=submission.project_id), "administer")
    if submission.submitted_by_id == user.pk:
        raise PermissionRefused("You submitted this task: another admin must settle it.")
    if decision not in Decision.values:
        raise ApplicationError("Choose 'approve' or 'request changes'.")
    note = _text(note, "note")
    if not note:
        raise ApplicationError("Say why: the author and both reviewers read your note.")
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    if submission.status != SubmissionStatus.ADJUDICATION:
        raise ApplicationError(f"Version {submission.number} is {submission.get_status_display().lower()}: "
                               "only a submission whose reviewers disagree is adjudicated.")
    if decision == Decision.APPROVE:
        refuse_unrenderable(submission.snapshot.get("world", {}).get("documents", []), lead=render_check.APPROVE_LEAD)
    adjudication = Adjudication.objects.create(submission=submission, admin=user, decision=decision, note=note)
    audit_record(project_id=submission.project_id, submission=submission, actor=user, verb=AuditVerb.ADJUDICATED,
                 summary=f"Adjudicated version {submission.number}: {adjudication.decision_done} — {note[:200]}",
                 data={"decision": decision, "note": note})
    _finish(submission, user, decision, note)
    notify(recipients=[r.reviewer for r in submission.reviews.select_related("reviewer")], project_id=submission.project_id,
           url=_link(submission),
           text=f"An admin settled “{submission.title}” v{submission.number}: {adjudication.decision_done}.")
    return adjudication


@transaction.atomic
def probe_explain(*, probe: ProbeAnswer, user: User, note: str) -> ProbeExplanation:
    """The author's reason a flagged probe is not a hole in the rubric (clears the probe gate for it)."""
    env_task = probe.run.env_task
    require_role(membership_get(user=user, project_id=env_task.project_id), "author")
    note = _text(note, "explanation")
    if not note:
        raise ApplicationError("Write why this probe passing is not a problem.")
    _, unexplained = unexplained_probes(env_task=env_task, rubric_version=probe.run.rubric_version)
    if probe.pk not in {row["probe"].pk for row in unexplained} and not hasattr(probe, "explanation"):
        raise ApplicationError("This probe is not flagged on its rubric version: there is nothing to explain.")
    explanation, _ = ProbeExplanation.objects.update_or_create(probe=probe, defaults={"note": note, "author": user})
    audit_record(project_id=env_task.project_id, env_task_id=env_task.pk, actor=user, verb=AuditVerb.PROBE_EXPLAINED,
                 summary=f"Explained probe “{probe.label}”: {note[:200]}", data={"probe": probe.label, "note": note})
    return explanation
