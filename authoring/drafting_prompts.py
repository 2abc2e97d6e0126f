"""What the drafting model is told. Kept apart from the services so experts' questions
("what does the model see?") have one place to be answered."""

import json

from authoring.models import Document, World

SYSTEM = (
    "You draft documents for a realistic professional data room used to evaluate AI agents. "
    "Write the way the people in the scenario would really write: specific names, amounts, dates and "
    "clauses, consistent with the facts sheet and with the other documents. Never mention that the "
    "document is synthetic. Reply only with JSON that matches the given schema."
)

SKELETON_SYSTEM = (
    "You design the data room of a realistic professional engagement: every file, email, chat message "
    "and calendar event the people involved would have produced. Reply only with JSON matching the schema."
)

SKELETON_SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "kind", "brief", "target_size"],
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Folder/Name.ext for files; Mail/… for emails; Chat/<channel>/… for chat; Calendar/… for events",
                    },
                    "kind": {"type": "string", "enum": ["file", "email", "chat", "event"]},
                    "format": {"type": "string", "enum": ["docx", "xlsx", "pptx", "pdf", "md", "csv", ""]},
                    "brief": {"type": "string"},
                    "target_size": {"type": "integer", "minimum": 10},
                    "metadata": {
                        "type": "object",
                        "properties": {
                            k: {"type": "string"}
                            for k in ("from", "to", "cc", "date", "subject", "channel", "attendees", "start", "end", "location", "thread")
                        },
                    },
                },
            },
        }
    },
}


def _facts(world: World) -> str:
    return "\n".join(f"- {f['key']}: {f['value']}" for f in world.facts) or "(none)"


def skeleton_messages(world: World, existing: list[str]) -> list[dict]:
    return [
        {"role": "system", "content": SKELETON_SYSTEM},
        {"role": "user", "content": (
            f"Scenario outline:\n{world.outline}\n\nFacts sheet:\n{_facts(world)}\n\n"
            f"Documents already in the data room (do not propose these again):\n" + ("\n".join(existing) or "(none)") +
            "\n\nPropose the rest of the data room: 10 to 40 items mixing files, emails, chat messages and events, "
            "each with a one-paragraph brief saying what it must contain, and a target size in words."
        )},
    ]


ROOM_FIELDS = ("pk", "path", "kind", "brief", "metadata")


def room_listing(world: World) -> list[dict]:
    """Every item of the room as plain values, without content: drafting reads this once
    per document, so it must stay cheap for rooms of hundreds of items."""
    return list(world.documents.values(*ROOM_FIELDS))


def neighbours(document: Document, room: list[dict]) -> list[dict]:
    """The documents this one must agree with most closely: the earlier messages of its
    thread, and documents its brief names by path or file name. Only these few are read
    with their content."""
    thread_root = document.metadata.get("thread") or document.path
    date = document.metadata.get("date", "~")
    chosen = [
        d["pk"] for d in room
        if d["pk"] != document.pk and (
            ((d["path"] == thread_root or d["metadata"].get("thread") == thread_root) and d["metadata"].get("date", "") <= date)
            or d["path"] in document.brief or d["path"].rpartition("/")[2] in document.brief
        )
    ]
    found = {d["pk"]: d for d in Document.objects.filter(pk__in=chosen).exclude(content="").values("pk", "path", "metadata", "content")}
    return [found[pk] for pk in chosen if pk in found][:8]


def draft_messages(document: Document, room: list[dict], *, instruction: str = "") -> list[dict]:
    world = document.world
    kinds = dict(Document._meta.get_field("kind").choices)
    listing = "\n".join(f"- {d['path']} ({kinds.get(d['kind'], d['kind'])}): {d['brief'][:160]}" for d in room[:300])
    context = "\n\n".join(
        f"### {d['path']}\nMetadata: {json.dumps(d['metadata'])}\n{d['content'][:6000]}" for d in neighbours(document, room)
    )
    ask = (
        f"Scenario outline:\n{world.outline}\n\nFacts sheet (every document must agree with it):\n{_facts(world)}\n\n"
        f"The data room:\n{listing}\n\n"
        + (f"Related documents, which this one must agree with:\n{context}\n\n" if context else "")
        + f"Draft this item.\nPath: {document.path}\nKind: {document.get_kind_display()}"
        + (f" ({document.format})" if document.format else "")
        + f"\nBrief: {document.brief}\nMetadata already set (keep these values): {json.dumps(document.metadata)}\n"
        f"Target length: about {document.target_size} words."
    )
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ask}]
    if instruction:
        messages.append({"role": "user", "content": (
            f"The current version is:\n{document.content[:20000]}\n\nRewrite it following this instruction from the expert: {instruction}"
        )})
    return messages


NOUNS = {
    "docx": "a Word document (.docx)", "xlsx": "a spreadsheet (.xlsx)", "pptx": "a slide deck (.pptx)", "pdf": "a PDF",
    "md": "a markdown file", "csv": "a CSV table", "email": "an email (.eml)", "chat": "a chat message",
    "event": "a calendar event (.ics)",
}


def document_noun(document: Document) -> str:
    """What the document becomes, in an expert's words: 'a spreadsheet (.xlsx)'."""
    return NOUNS.get(document.kind if document.kind != "file" else document.format, "its file")


def repair_messages(messages: list[dict], structured: object, content: str, problem: str, *, document: Document) -> list[dict]:
    """The conversation so far, the draft the model gave, and why it did not build: the
    renderer's message names a line of the document's text form (shown) or a metadata field."""
    shown = content if len(content) <= 12_000 else content[:12_000] + "\n…"
    numbered = "\n".join(f"{n:>4}  {line}" for n, line in enumerate(shown.split("\n"), 1))
    return [
        *messages,
        {"role": "assistant", "content": json.dumps(structured, ensure_ascii=False)},
        {"role": "user", "content": (
            f"That draft cannot be built into {document_noun(document)}. The problem: {problem}\n\n"
            f"Your draft in the data room's text form, with line numbers:\n{numbered}\n\n"
            "Reply again with the whole corrected document as JSON matching the schema: fix that problem and keep "
            "everything else as it was. Dates and times need their UTC offset (e.g. 2026-01-05T09:30:00+01:00); "
            "an event's end is not before its start; number formats apply to plain cell ranges such as B2:B9."
        )},
    ]
