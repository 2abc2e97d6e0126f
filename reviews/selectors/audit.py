"""The audit trail as people read it: one timeline merging the QA events (reviews.models.
AuditEvent: submissions, claims, releases, checklist answers, decisions, adjudications,
comments, probe explanations, policy changes) with the rubric versions of the task and the
document versions of its world, which live in their own immutable tables.

The three sources are merged by the database (one UNION ordered by time), so a page of a
10,000-event timeline costs one query for its rows and one for its count, and the pack's
export reads the trails of a whole chunk of tasks in one query.

Filters are allow-listed: an unknown kind, a person who is not a member of the project or
a date that is not a date is refused with a message (a 400 on the API), never ignored.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import CharField, F, IntegerField, Q, QuerySet, Value
from django.db.models.functions import Cast
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, Project, User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring.models import DocumentVersion, EnvTask, RubricVersion, VersionSource
from core.exceptions import ApplicationError
from reviews.models import AuditEvent, AuditVerb
from reviews.selectors.queue import submissions_blind_to

RUBRIC_VERSION = "rubric_version"
DOCUMENT_VERSION = "document_version"
# Every kind of line the timeline shows, with the label people read; the only values a
# kind filter accepts.
KINDS: dict[str, str] = {**dict(AuditVerb.choices), RUBRIC_VERSION: "New rubric version", DOCUMENT_VERSION: "New document version"}

_EVENT, _RUBRIC, _DOCUMENT = 0, 1, 2
_ORIGINS = dict(VersionSource.choices)
_COMMENT_KINDS = (AuditVerb.COMMENTED, AuditVerb.COMMENT_RESOLVED, AuditVerb.COMMENT_REOPENED)


@dataclass(frozen=True)
class AuditEntry:
    at: datetime
    actor: str | None  # username; None for the system (a lapsed claim, a disagreement found)
    kind: str  # a key of KINDS
    kind_label: str
    summary: str
    link: str  # where to see it ("" when there is nothing to open)
    submission: int | None  # the task version (submission number) it concerns
    where: str  # the task's title, or "World: <title>" for a document version
    task_id: int | None = None
    world_id: int | None = None


@dataclass(frozen=True)
class AuditFilters:
    """Checked filter values (see audit_filters_clean); empty means everything."""

    kinds: tuple[str, ...] = ()
    actor_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None

    def as_kwargs(self) -> dict:
        return {"verbs": self.kinds or None, "actor_id": self.actor_id, "since": self.since, "until": self.until}


def _null(field) -> Cast:
    # Typed: PostgreSQL resolves a UNION's column types part by part, and two untyped NULLs
    # in a row become text, which then cannot meet the next part's bigint.
    return Cast(Value(None), output_field=field)


def _columns(**columns) -> dict:
    """The same columns, in the same order, for every part of the union."""
    names = ("e_at", "e_source", "e_id", "e_kind", "e_actor", "e_summary", "e_submission", "e_number", "e_task", "e_where",
             "e_world", "e_document", "e_detail", "e_origin", "e_project")
    return {name: columns[name] for name in names}


def _events(where: Q) -> QuerySet:
    return AuditEvent.objects.filter(where).values(**_columns(
        e_at=F("at"), e_source=Value(_EVENT), e_id=F("id"), e_kind=F("verb"), e_actor=F("actor__username"), e_summary=F("summary"),
        e_submission=F("submission_id"), e_number=F("submission__number"), e_task=F("env_task_id"), e_where=F("env_task__title"),
        e_world=_null(IntegerField()), e_document=_null(IntegerField()), e_detail=_null(CharField()), e_origin=_null(CharField()),
        e_project=F("project_id"),
    ))


def _rubrics(where: Q) -> QuerySet:
    return RubricVersion.objects.filter(where).values(**_columns(
        e_at=F("created_at"), e_source=Value(_RUBRIC), e_id=F("id"), e_kind=Value(RUBRIC_VERSION), e_actor=F("created_by__username"),
        e_summary=_null(CharField()), e_submission=_null(IntegerField()), e_number=F("number"), e_task=F("env_task_id"),
        e_where=F("env_task__title"), e_world=_null(IntegerField()), e_document=_null(IntegerField()), e_detail=_null(CharField()),
        e_origin=_null(CharField()), e_project=F("env_task__project_id"),
    ))


def _documents(where: Q) -> QuerySet:
    return DocumentVersion.objects.filter(where).values(**_columns(
        e_at=F("created_at"), e_source=Value(_DOCUMENT), e_id=F("id"), e_kind=Value(DOCUMENT_VERSION),
        e_actor=F("created_by__username"), e_summary=F("note"), e_submission=_null(IntegerField()), e_number=F("number"),
        e_task=_null(IntegerField()), e_where=F("document__world__title"), e_world=F("document__world_id"),
        e_document=F("document_id"), e_detail=F("document__path"), e_origin=F("source"), e_project=F("document__world__project_id"),
    ))


def _timeline(*, events: Q, rubrics: Q, documents: Q, verbs: Iterable[str] | None, actor_id: int | None,
              since: datetime | None, until: datetime | None, newest_first: bool) -> QuerySet:
    kinds = set(verbs or ())
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise ApplicationError(f"Unknown kind of event: {', '.join(unknown)[:200]}. Choose from: {', '.join(KINDS)}.")
    event_kinds = kinds & set(AuditVerb.values)
    parts = []
    for part, wanted, when, who in (
        (_events(events & (Q(verb__in=event_kinds) if event_kinds else Q())), not kinds or event_kinds, "at", "actor_id"),
        (_rubrics(rubrics), not kinds or RUBRIC_VERSION in kinds, "created_at", "created_by_id"),
        (_documents(documents), not kinds or DOCUMENT_VERSION in kinds, "created_at", "created_by_id"),
    ):
        if not wanted:
            continue
        if actor_id is not None:
            part = part.filter(**{who: actor_id})
        if since is not None:
            part = part.filter(**{f"{when}__gte": since})
        if until is not None:
            part = part.filter(**{f"{when}__lte": until})
        parts.append(part.order_by())  # the models' default orderings are not allowed inside a UNION
    combined = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    order = ("e_at", "e_source", "e_id")
    return combined.order_by(*(f"-{name}" for name in order) if newest_first else order)


def audit_timeline(*, env_task: EnvTask | None = None, project_id: int | None = None, verbs: Iterable[str] | None = None,
                   actor_id: int | None = None, since: datetime | None = None, until: datetime | None = None,
                   newest_first: bool = False, reader: User | None = None) -> QuerySet:
    """The merged timeline of one task (its events, its rubric versions, its world's document
    versions) or of a whole project, as rows for audit_entries; oldest first unless asked.
    No access check here: callers get the task through env_task_get_for_user (members of
    its project) or check the project with audit_project_get_for_user (its admins). With a
    `reader`, the decisions and checklists of the versions still blind to them (a reviewer
    who may yet decide on it: queue.submissions_blind_to) are left out."""
    if (env_task is None) == (project_id is None):
        raise ValueError("audit_timeline needs a task or a project, not both")
    if env_task is not None:
        scope = {"events": Q(env_task_id=env_task.pk), "rubrics": Q(env_task_id=env_task.pk),
                 "documents": Q(document__world_id=env_task.world_id)}
    else:
        scope = {"events": Q(project_id=project_id), "rubrics": Q(env_task__project_id=project_id),
                 "documents": Q(document__world__project_id=project_id)}
    if reader is not None:
        blind = submissions_blind_to(user=reader)
        scope["events"] &= ~Q(verb__in=[AuditVerb.REVIEWED, AuditVerb.CHECKLIST], submission_id__in=blind)
    return _timeline(**scope, verbs=verbs, actor_id=actor_id, since=since, until=until, newest_first=newest_first)


def audit_project_get_for_user(*, user: User, project_id: int) -> Project:
    """The project whose whole timeline the user may read: 404 outside the project,
    PermissionRefused (403) for its authors and reviewers (admins only)."""
    membership = membership_get(user=user, project_id=project_id)
    require_role(membership, "administer")
    return membership.project


def audit_people(*, project_id: int) -> list[tuple[int, str]]:
    """Who may be chosen in the actor filter: the project's members, by username."""
    return list(Membership.objects.filter(project_id=project_id).order_by("user__username").values_list("user_id", "user__username"))


def _day(value: str | None, what: str) -> date | None:
    value = (value or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ApplicationError(f"The {what} date must look like 2026-03-31, not {value[:40]!r}.") from None


def audit_filters_clean(*, project_id: int, kind: str | None = None, actor: str | None = None, since: str | None = None,
                        until: str | None = None) -> AuditFilters:
    """Filter values as typed (a page's form or the API's query): a kind from KINDS, a
    member of the project by username, dates as YYYY-MM-DD (whole days, both included, in
    the site's time zone). Anything else is an ApplicationError saying what is allowed."""
    kind = (kind or "").strip()
    if kind and kind not in KINDS:
        raise ApplicationError(f"Unknown kind of event {kind[:40]!r}. Choose from: {', '.join(KINDS)}.")
    actor = (actor or "").strip()
    actor_id = None
    if actor:
        actor_id = Membership.objects.filter(project_id=project_id, user__username=actor).values_list("user_id", flat=True).first()
        if actor_id is None:
            raise ApplicationError(f"{actor[:40]!r} is not a member of this project.")
    first, last = _day(since, "from"), _day(until, "to")
    if first and last and first > last:
        raise ApplicationError("The 'from' date is after the 'to' date.")
    zone = timezone.get_current_timezone()
    return AuditFilters(
        kinds=(kind,) if kind else (),
        actor_id=actor_id,
        since=datetime.combine(first, time.min, tzinfo=zone) if first else None,
        until=datetime.combine(last + timedelta(days=1), time.min, tzinfo=zone) - timedelta(microseconds=1) if last else None,
    )


def _summary(row: dict) -> str:
    if row["e_source"] == _RUBRIC:
        return f"Rubric version {row['e_number']} created"
    if row["e_source"] == _DOCUMENT:
        origin = _ORIGINS.get(row["e_origin"], "")
        text = f"{row['e_detail']}: version {row['e_number']}" + (f" ({origin.lower()})" if origin else "")
        return text + (f" — {row['e_summary']}" if row["e_summary"] else "")
    return row["e_summary"]


def _link(row: dict) -> str:
    if row["e_source"] == _DOCUMENT:
        return reverse("document-versions", args=[row["e_document"]])
    if row["e_source"] == _RUBRIC:
        return reverse("task-editor", args=[row["e_task"]]) + "#rubric"
    if row["e_task"] and row["e_kind"] in _COMMENT_KINDS:
        return reverse("task-comments", args=[row["e_task"]])
    if row["e_submission"]:
        return reverse("submission-review", args=[row["e_submission"]])
    if row["e_task"]:
        return reverse("task-editor", args=[row["e_task"]])
    if row["e_kind"] in (AuditVerb.POLICY_CHANGED, AuditVerb.CHECKLIST_CHANGED):
        return reverse("review-settings", args=[row["e_project"]])
    return ""


def audit_entries(rows: Iterable[dict]) -> list[AuditEntry]:
    """Timeline rows (a page of audit_timeline) as the entries the pages and API show."""
    return [
        AuditEntry(
            at=row["e_at"], actor=row["e_actor"], kind=row["e_kind"], kind_label=KINDS.get(row["e_kind"], row["e_kind"]),
            summary=_summary(row), link=_link(row), submission=row["e_number"] if row["e_source"] == _EVENT else None,
            where=f"World: {row['e_where']}" if row["e_source"] == _DOCUMENT else (row["e_where"] or ""),
            task_id=row["e_task"], world_id=row["e_world"],
        )
        for row in rows
    ]


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def audit_trails_for_tasks(*, tasks: dict[int, int], until: datetime) -> dict[int, list[dict]]:
    """The audit trails of several tasks up to `until` (a pack's creation), for the pack's
    manifest: `tasks` maps task pk → the pk of its world. One query for them all. Each line:
    {at (ISO 8601, UTC), actor (username), kind, summary, submission (the version number)}."""
    trails: dict[int, list[dict]] = {pk: [] for pk in tasks}
    if not tasks:
        return trails
    on_world: dict[int, list[int]] = {}
    for task_pk, world_pk in tasks.items():
        on_world.setdefault(world_pk, []).append(task_pk)
    rows = _timeline(events=Q(env_task_id__in=list(tasks)), rubrics=Q(env_task_id__in=list(tasks)),
                     documents=Q(document__world_id__in=list(on_world)), verbs=None, actor_id=None, since=None, until=until,
                     newest_first=False)
    # (Straight from the rows, not audit_entries: a manifest has no use for the pages' links,
    # and reversing them would load every URLconf and view into a packs worker.)
    for row in rows:
        line = {"at": _iso(row["e_at"]), "actor": row["e_actor"], "kind": row["e_kind"], "summary": _summary(row),
                "submission": row["e_number"] if row["e_source"] == _EVENT else None}
        for task_pk in ([row["e_task"]] if row["e_task"] is not None else on_world.get(row["e_world"], [])):
            trails[task_pk].append(line)
    return trails
