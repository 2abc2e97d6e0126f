"""Which documents of a world cannot be built into their real files.

The check is the download's and the pack's own code (authoring.rendering.render_file per
document, then the world-wide mail, chat and calendar renders that tie threads and ids
together), so a document it passes downloads and packs. Submitting and approving a task
refuse while this list is not empty.

A render can be slow (a PDF about 0.7 s, an xlsx with formulas 1.5 s), so each
document's verdict is cached under a digest of everything the render reads and of the
rendering code: editing a document (a new revision) makes a new key, and nothing stale
is ever answered.
"""

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from django.core.cache import cache as shared_cache

from authoring.models import Document, DocumentStatus, World
from core.exceptions import ApplicationError

logger = logging.getLogger(__name__)
CACHE_SECONDS = 7 * 24 * 3600
WORLD_KINDS = ("email", "chat", "event")


@cache
def _renderer_digest() -> str:
    """A digest of the rendering code: a fix to a renderer invalidates every cached verdict."""
    import authoring.rendering

    sha = hashlib.sha256()
    for path in sorted(Path(authoring.rendering.__file__).parent.glob("*.py")):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def _key(document: Mapping) -> str:
    parts = [document.get("kind"), document.get("format"), document.get("path"), document.get("content"), document.get("metadata")]
    body = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode()
    return f"render-check:{_renderer_digest()}:{hashlib.sha256(body).hexdigest()}"


def render_problem(*, kind: str, format: str, content: str, metadata: dict | None, path: str) -> str:
    """Why this document cannot be built into its file ("" when it can), in the
    renderer's words: they name the line or the metadata field."""
    from authoring.rendering import render_file  # the office libraries load only when a file is made

    try:
        render_file(kind, format, content, metadata or {}, path=path)
    except ApplicationError as error:
        return error.message
    except Exception as error:  # a library's failure on odd content: name it, keep the trace in the log
        logger.exception("Rendering %s failed", path)
        return f"the file could not be made ({type(error).__name__})"
    return ""


def _cached_problem(document: Mapping) -> str:
    key = _key(document)
    found = shared_cache.get(key)
    if found is None:
        found = render_problem(
            kind=document["kind"], format=document.get("format") or "", content=document.get("content") or "",
            metadata=document.get("metadata") or {}, path=document["path"],
        )
        shared_cache.set(key, found, CACHE_SECONDS)
    return found


def _is_skeleton(document: Mapping) -> bool:
    # A skeleton line has nothing to render yet; the pack names it on its own ("draft it or delete it").
    return document.get("status") == DocumentStatus.SKELETON and not document.get("content")


def _world_problems(documents: list[Mapping]) -> dict[str, str]:
    """Problems only the world-wide renders see: a reply whose thread is missing, two
    messages with one id, a thread that changes channel. Their messages start with the path."""
    from authoring.rendering import WorldItem, render_chat, render_ics, render_mbox

    renders = {"email": render_mbox, "chat": render_chat, "event": render_ics}
    problems: dict[str, str] = {}
    for kind, render in renders.items():
        items = [WorldItem(d["path"], d.get("content") or "", dict(d.get("metadata") or {})) for d in documents if d["kind"] == kind]
        if not items:
            continue
        # Cached like a document's verdict, under a digest of every item of the kind: a world's
        # mail is one mbox, and putting 1,000 emails together takes seconds, on every load of
        # an email's page otherwise.
        body = json.dumps(sorted((i.path, i.content, i.metadata) for i in items), sort_keys=True, ensure_ascii=False, default=str)
        key = f"render-check-world:{_renderer_digest()}:{kind}:{hashlib.sha256(body.encode()).hexdigest()}"
        found = shared_cache.get(key)
        if found is None:
            found = {}
            try:
                render(items)
            except ApplicationError as error:
                path = next((i.path for i in items if error.message.startswith(f"{i.path}: ")), items[0].path)
                found[path] = error.message.removeprefix(f"{path}: ")
            except Exception as error:
                logger.exception("Rendering the world's %s failed", kind)
                found[items[0].path] = f"the {kind} items could not be put together ({type(error).__name__})"
            shared_cache.set(key, found, CACHE_SECONDS)
        problems.update(found)
    return problems


def unrenderable(documents: Iterable[Mapping]) -> list[tuple[str, str]]:
    """[(path, reason)] for every document (as plain values: path, kind, format, content,
    metadata, status) that cannot be built into its file, in path order."""
    live = [d for d in documents if not _is_skeleton(d)]
    problems = {d["path"]: reason for d in live if (reason := _cached_problem(d))}
    fine = [d for d in live if d["path"] not in problems and d["kind"] in WORLD_KINDS]
    problems.update(_world_problems(fine))
    return sorted(problems.items())


def document_problem(*, document: Document) -> str:
    """Why this document cannot be built into its file ("" when it can): its own render,
    then, for mail, chat and events, the world's items of its kind put together (a reply
    whose thread is not the path of the thread's first email shows only there)."""
    fields = ("path", "kind", "format", "content", "metadata", "status")
    values = {field: getattr(document, field) for field in fields}
    if _is_skeleton(values):
        return ""
    problem = _cached_problem(values)
    if problem or document.kind not in WORLD_KINDS:
        return problem
    same_kind = [d for d in document.world.documents.filter(kind=document.kind).values(*fields) if not _is_skeleton(d)]
    return _world_problems(same_kind).get(document.path, "")


def unrenderable_documents(*, world: World) -> list[tuple[Document, str]]:
    """The world's documents that cannot be built into their files, with the reason."""
    problems = unrenderable(world_documents(world))
    by_path = {d.path: d for d in world.documents.filter(path__in=[path for path, _ in problems])}
    return [(by_path[path], reason) for path, reason in problems]


SUBMIT_LEAD = "Before submitting, fix these documents (they cannot be built into files)"
APPROVE_LEAD = ("This version cannot be approved: these documents of its world cannot be built into files "
                "(request changes so that the author fixes them)")


def refuse_unrenderable(documents: Iterable[Mapping], *, lead: str) -> None:
    """Raise, listing each document and why, when any of them cannot be built into its file."""
    problems = unrenderable(documents)
    if problems:
        raise ApplicationError(
            f"{lead}: " + "; ".join(f"{path} — {reason}" for path, reason in problems),
            extra={"documents": [{"path": path, "reason": reason} for path, reason in problems]},
        )


def world_documents(world: World) -> list[dict]:
    """A world's documents as the plain values `unrenderable` reads."""
    return list(world.documents.values("path", "kind", "format", "content", "metadata", "status"))
