"""Skeleton proposals: a model proposes a world's data room, the expert reviews it item by
item (edit, reject, accept, add their own) and accepted items become skeleton documents.

Every item is checked before it can be accepted: a kind that contradicts the item's name
(a `.docx` proposed as a chat message) is marked as a problem in words and never accepted.
Items are only appended or flagged, never removed, so an item's index is stable for the
pages and the API that address it.
"""

import logging
from datetime import timedelta
from pathlib import PurePosixPath

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from authoring import drafting_prompts
from authoring.models import Document, DocumentFormat, DocumentKind, SkeletonProposal, SkeletonProposalStatus, World
from authoring.services.common import author_membership
from authoring.services.documents import clean_document_fields, document_create
from authoring.tasks import suggest_skeleton
from core.exceptions import ApplicationError
from llm.client import chat
from llm.errors import ModelError
from llm.models import CallPurpose, ModelEndpoint

logger = logging.getLogger(__name__)
MAX_PROPOSAL_ITEMS = 300
EDITABLE_FIELDS = ("path", "kind", "format", "brief", "target_size")
KIND_NAMES = {DocumentKind.FILE: "a file", DocumentKind.EMAIL: "an email", DocumentKind.CHAT: "a chat message",
              DocumentKind.EVENT: "a calendar event"}
KIND_CHOICE = {DocumentKind.FILE: "File", DocumentKind.EMAIL: "Email", DocumentKind.CHAT: "Chat message",
               DocumentKind.EVENT: "Calendar event"}
# Extensions that say what an item is, whatever kind it was proposed as.
FILE_EXTENSIONS = {*DocumentFormat.values, "doc", "xls", "ppt", "txt", "rtf", "odt", "ods", "odp", "json", "html", "xml"}
EXTENSION_KINDS = {"eml": DocumentKind.EMAIL, "msg": DocumentKind.EMAIL, "mbox": DocumentKind.EMAIL, "ics": DocumentKind.EVENT}
BINARY_FORMATS = {"docx", "xlsx", "pptx", "pdf", "csv"}


# --- Checking an item ------------------------------------------------------------------------

def _extension(path: str) -> str:
    suffix = PurePosixPath(path.strip()).suffix.lower().lstrip(".")
    return suffix if suffix.isalpha() and len(suffix) <= 5 else ""


def _kind_problem(*, path: str, kind: str, format: str) -> str:
    """Why this kind does not fit the item's name and format, in the expert's words; '' when it does."""
    ext = _extension(path)
    if kind not in KIND_NAMES:
        return f"Unknown kind {kind!r}: choose File, Email, Chat message or Calendar event."
    if kind != DocumentKind.FILE:
        if ext in FILE_EXTENSIONS:
            return f"A .{ext} is a file, not {KIND_NAMES[kind]}: choose File or rename it."
        if ext in EXTENSION_KINDS and EXTENSION_KINDS[ext] != kind:
            other = EXTENSION_KINDS[ext]
            return f"A .{ext} is {KIND_NAMES[other]}, not {KIND_NAMES[kind]}: choose {KIND_CHOICE[other]} or rename it."
        if format in BINARY_FORMATS:
            name = KIND_NAMES[kind]
            return f"{name[0].upper()}{name[1:]} has no file format, but {format} was given: choose File, or clear the format."
        return ""
    if ext in EXTENSION_KINDS:
        other = EXTENSION_KINDS[ext]
        return f"A .{ext} is {KIND_NAMES[other]}, not a file: choose {KIND_CHOICE[other]} or rename it."
    if ext and ext not in DocumentFormat.values:
        return f"A .{ext} file cannot be built here: rename it to one of .{', .'.join(DocumentFormat.values)}."
    if not ext and not format:
        return "A file needs a format: end its name with .docx, .xlsx, .pptx, .pdf, .md or .csv, or choose a format."
    if ext and format and ext != format:
        label = DocumentFormat(format).label if format in DocumentFormat.values else format
        return f"The name ends in .{ext} but the format is {label}: change one so that they match."
    return ""


def item_problem(item: dict, taken: set[str]) -> tuple[str, dict]:
    """The first reason this item cannot become a document ('' when it can), and its fields
    as a document would store them. `taken`: the paths already used, by the data room or by
    earlier items of the proposal."""
    problem = _kind_problem(path=item.get("path", ""), kind=item.get("kind", ""), format=item.get("format", ""))
    if problem:
        return problem, {}
    try:
        cleaned = clean_document_fields(
            path=item.get("path", ""), kind=item["kind"], format=item.get("format", ""), metadata=item.get("metadata") or {},
            target_size=item.get("target_size", 300),
        )
    except ApplicationError as error:
        return error.message, {}
    if cleaned["path"] in taken:
        return "A document with this path already exists: rename it or reject this item.", cleaned
    return "", cleaned


def _recheck(items: list[dict], existing: set[str]) -> None:
    """Mark each open item's problem, against the data room and the items before it."""
    taken = set(existing)
    for item in items:
        item.setdefault("rejected", False)
        if item.get("accepted"):
            continue
        item["problem"], cleaned = item_problem(item, taken)
        if cleaned and not item["problem"]:
            item.update(cleaned)  # e.g. a file's format read from its name
        if not item["rejected"]:
            taken.add(item.get("path", "").strip())


def proposal_open_items(proposal: SkeletonProposal | None) -> int:
    """How many items can be accepted now (not accepted, not rejected, without a problem)."""
    if proposal is None:
        return 0
    return sum(1 for i in proposal.items if not i.get("accepted") and not i.get("rejected") and not i.get("problem"))


def _item_from(raw: dict, *, source: str) -> dict:
    try:
        target_size = int(raw.get("target_size", 300))
    except (TypeError, ValueError):
        target_size = raw.get("target_size")
    return {
        "path": str(raw.get("path") or "").strip(), "kind": str(raw.get("kind") or "file"), "format": str(raw.get("format") or ""),
        "brief": str(raw.get("brief") or ""), "metadata": raw.get("metadata") or {}, "target_size": target_size,
        "accepted": False, "rejected": False, "problem": "", "source": source,
    }


# --- Asking the model -------------------------------------------------------------------------

@transaction.atomic
def skeleton_suggest(*, world: World, user: User, endpoint: ModelEndpoint) -> SkeletonProposal:
    author_membership(user=user, project_id=world.project_id)
    if not endpoint.enabled:
        raise ApplicationError(f"The model endpoint {endpoint.name!r} is disabled.")
    if not world.outline.strip() and not world.facts:
        raise ApplicationError("Write the scenario outline (and ideally the facts sheet) first: the model builds the data room from them.")
    proposal = SkeletonProposal.objects.create(world=world, endpoint=endpoint, endpoint_name=endpoint.name, requested_by=user)
    transaction.on_commit(lambda: suggest_skeleton.delay(proposal.pk))
    return proposal


def skeleton_proposals_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the proposals whose broker message may be lost (see draft_jobs_recover).
    A proposal stays queued while the model works on it, so one a live worker is running
    now may be asked twice; the first answer is kept and the second dropped."""
    if queued_for is None:
        return 0  # (a proposal has no running state to go stale)

    ids = list(
        SkeletonProposal.objects.filter(status=SkeletonProposalStatus.QUEUED, created_at__lt=timezone.now() - queued_for)
        .values_list("pk", flat=True)
    )
    for proposal_id in ids:
        suggest_skeleton.delay(proposal_id)
    return len(ids)


def skeleton_proposal_execute(*, proposal_id: int) -> None:
    """Ask the model for a data room. Safe to run twice: only a queued proposal is asked
    for, and only the first answer is kept."""
    proposal = SkeletonProposal.objects.select_related("world", "endpoint").filter(pk=proposal_id).first()
    if proposal is None or proposal.status != SkeletonProposalStatus.QUEUED:
        return  # (its world was deleted, or another delivery finished it)
    try:
        _propose(proposal)
    except (ModelError, ApplicationError) as error:
        _proposal_failed(proposal_id, error.message)
    except Exception as error:  # a bug must still leave a readable, terminal proposal
        logger.exception("skeleton proposal %s failed", proposal_id)
        _proposal_failed(proposal_id, f"Internal error ({type(error).__name__}); the team has the log.")


def _proposal_failed(proposal_id: int, error: str) -> None:
    SkeletonProposal.objects.filter(pk=proposal_id, status=SkeletonProposalStatus.QUEUED).update(
        status=SkeletonProposalStatus.FAILED, error=error[:2000]
    )


def _propose(proposal: SkeletonProposal) -> None:
    world = proposal.world
    if proposal.endpoint is None:
        raise ApplicationError("The model endpoint was deleted.")
    existing = list(world.documents.values_list("path", flat=True))
    result = chat(
        endpoint=proposal.endpoint, messages=drafting_prompts.skeleton_messages(world, existing),
        purpose=CallPurpose.SKELETON, project_id=world.project_id, schema=drafting_prompts.SKELETON_SCHEMA,
    )
    raw_items = result.structured.get("items", []) if isinstance(result.structured, dict) else []
    items = [_item_from(raw, source="model") for raw in raw_items[:MAX_PROPOSAL_ITEMS] if isinstance(raw, dict)]
    _recheck(items, set(existing))
    SkeletonProposal.objects.filter(pk=proposal.pk, status=SkeletonProposalStatus.QUEUED).update(
        status=SkeletonProposalStatus.READY, items=items
    )


# --- The expert's review -----------------------------------------------------------------------

def _proposal_for_edit(*, proposal: SkeletonProposal, user: User) -> SkeletonProposal:
    author_membership(user=user, project_id=proposal.world.project_id)
    proposal = SkeletonProposal.objects.select_for_update().select_related("world").get(pk=proposal.pk)
    if proposal.status != SkeletonProposalStatus.READY:
        raise ApplicationError("This proposal is not ready yet: wait for the model to finish.")
    return proposal


def _item_at(proposal: SkeletonProposal, index: int) -> dict:
    if not isinstance(index, int) or not 0 <= index < len(proposal.items):
        raise ApplicationError("That item is not in the proposal.")
    return proposal.items[index]


def _save(proposal: SkeletonProposal) -> SkeletonProposal:
    _recheck(proposal.items, set(proposal.world.documents.values_list("path", flat=True)))
    proposal.save(update_fields=["items", "updated_at"])
    return proposal


def _edited_fields(*, path: str, kind: str, format: str, brief: str, target_size: object) -> dict:
    path = (path or "").strip()
    if not path:
        raise ApplicationError("Write the item's path first, e.g. Deal/Letter of intent.docx.")
    if len(brief or "") > 20_000:
        raise ApplicationError("The brief is too long (20,000 characters at most).")
    try:
        target_size = int(target_size)
    except (TypeError, ValueError):
        raise ApplicationError("Target size must be a whole number of words.") from None
    return {"path": path, "kind": kind, "format": format or "", "brief": brief or "", "target_size": target_size}


@transaction.atomic
def skeleton_item_update(
    *, proposal: SkeletonProposal, user: User, index: int, path: str, kind: str, format: str, brief: str, target_size: object
) -> SkeletonProposal:
    """Change a proposed item before it is accepted. The change is kept even when it still
    has a problem (shown beside it), so nothing the expert typed is lost."""
    proposal = _proposal_for_edit(proposal=proposal, user=user)
    item = _item_at(proposal, index)
    if item.get("accepted"):
        raise ApplicationError("This item is already in the data room: edit it there.")
    item.update(_edited_fields(path=path, kind=kind, format=format, brief=brief, target_size=target_size))
    item["rejected"] = False
    return _save(proposal)


@transaction.atomic
def skeleton_item_reject(*, proposal: SkeletonProposal, user: User, index: int, rejected: bool = True) -> SkeletonProposal:
    """Set an item aside (it is never accepted), or bring it back."""
    proposal = _proposal_for_edit(proposal=proposal, user=user)
    item = _item_at(proposal, index)
    if item.get("accepted"):
        raise ApplicationError("This item is already in the data room: delete it there if you do not want it.")
    item["rejected"] = bool(rejected)
    return _save(proposal)


@transaction.atomic
def skeleton_item_add(
    *, proposal: SkeletonProposal, user: User, path: str, kind: str, format: str = "", brief: str = "", target_size: object = 300
) -> SkeletonProposal:
    """The expert's own row, reviewed and accepted like the model's."""
    proposal = _proposal_for_edit(proposal=proposal, user=user)
    if len(proposal.items) >= MAX_PROPOSAL_ITEMS:
        raise ApplicationError(f"A proposal holds at most {MAX_PROPOSAL_ITEMS} items: accept these, then add documents in the data room.")
    fields = _edited_fields(path=path, kind=kind, format=format, brief=brief, target_size=target_size)
    proposal.items.append({**_item_from(fields, source="author"), **fields})
    return _save(proposal)


@transaction.atomic
def skeleton_accept(*, proposal: SkeletonProposal, user: User, indexes: list[int] | None = None) -> list[Document]:
    """Turn proposed items into skeleton documents: the given ones, or all acceptable ones.
    Every item is checked again against the data room as it is now; an item with a
    problem, or one the expert rejected, is never accepted."""
    proposal = _proposal_for_edit(proposal=proposal, user=user)
    _recheck(proposal.items, set(proposal.world.documents.values_list("path", flat=True)))
    chosen = range(len(proposal.items)) if indexes is None else indexes
    created = []
    for index in chosen:
        item = _item_at(proposal, index)
        if item.get("accepted"):
            continue
        if item.get("rejected") or item["problem"]:
            if indexes is not None:
                reason = "you rejected it; bring it back first." if item.get("rejected") else item["problem"]
                raise ApplicationError(f"{item['path'] or 'This item'}: {reason}")
            continue
        created.append(document_create(
            world=proposal.world, user=user, path=item["path"], kind=item["kind"], format=item["format"],
            brief=item["brief"], metadata=item["metadata"], target_size=item["target_size"],
        ))
        item["accepted"] = True
    _save(proposal)
    return created
