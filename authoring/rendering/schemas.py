"""JSON schemas of what a model returns when it drafts a document.

The subset both OpenAI structured outputs (strict mode included) and Anthropic tools
accept: objects with every property required and no others, arrays, strings, integers
and enums, no oneOf. The shape is exactly parse_content's structured form.
"""

import copy

from .base import require_kind_format
from .headers import DESCRIPTION_MAX, LOCATION_MAX, SUMMARY_MAX
from .markdown import BLOCK_TYPES

INLINE = "Inline markdown allowed: **bold**, *italic*."


def _obj(properties: dict, description: str = "") -> dict:
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    if description:
        schema["description"] = description
    return schema


def _str(description: str = "", **extra) -> dict:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def _list(items: dict, description: str = "") -> dict:
    return {"type": "array", "items": items, **({"description": description} if description else {})}


ADDRESS = _obj({"name": _str("Display name, e.g. Jane Doe."), "email": _str("Email address.", format="email")})
WHEN = "ISO 8601 date and time with its UTC offset, e.g. 2026-01-05T09:30:00+01:00."

BLOCK = _obj({
    "type": {"type": "string", "enum": list(BLOCK_TYPES)},
    "level": {"type": "integer", "minimum": 0, "maximum": 6, "description": "Heading level 1–6 for a heading; 0 otherwise."},
    "text": _str(f"The heading or paragraph text; empty for bullets, numbered and table. {INLINE}"),
    "items": _list(_str(), f"The list items of bullets or numbered; empty otherwise. {INLINE}"),
    "header": _list(_str(), "The header cells of a table; empty otherwise."),
    "rows": _list(_list(_str()), "The body rows of a table, each as many cells as the header; empty otherwise."),
}, "One block of the document, in reading order.")

SCHEMAS = {
    "document": _obj({"blocks": _list(BLOCK)}, "A document as blocks: headings, paragraphs, lists and tables."),
    "pptx": _obj({
        "title": _str("The deck title for a title slide; empty for none."),
        "slides": _list(_obj({
            "title": _str("The slide title."),
            "bullets": _list(_str(), f"The slide's bullet points, a few words to one sentence each. {INLINE}"),
            "notes": _str("The speaker notes: what the presenter says on this slide."),
        })),
    }),
    "xlsx": _obj({"sheets": _list(_obj({
        "name": _str("The sheet name: at most 31 characters, none of [ ] : * ? / \\.", maxLength=31),
        "rows": _list(_list(_str()), (
            "Rows from row 1 down, each the cell texts from column A across (empty string for an empty cell). "
            "A text starting with = is an Excel formula with A1 references (=SUM(B2:B9), =B2/B$10, ='Other sheet'!C4); "
            "every cell a formula refers to must be inside this grid. Numbers are written plainly (6000000, 0.25) or as "
            "12.5% or $1,200.00; dates as YYYY-MM-DD. No volatile functions (TODAY, NOW, RAND, OFFSET, INDIRECT).")),
        "formats": _list(_obj({
            "range": _str("A cell or range, e.g. B2:B9."),
            "number_format": _str("An Excel number format, e.g. #,##0.00 or 0.0% or yyyy-mm-dd."),
        }), "Number formats for ranges of cells."),
    }))}),
    "csv": _obj({"rows": _list(_list(_str()), "The rows, the first one the header; every row as many cells as the header.")}),
    "email": _obj({
        "from": ADDRESS,
        "to": _list(ADDRESS),
        "cc": _list(ADDRESS),
        "bcc": _list(ADDRESS),
        "date": _str(WHEN, format="date-time"),
        "subject": _str("The subject line; replies start with Re:."),
        "attachments": _list(_str(), "Data-room paths of the files attached, only ones named in the brief."),
        "body": _str("The plain-text body, with greeting and sign-off; no quoted earlier messages unless asked."),
    }),
    "chat": _obj({
        "channel": _str("The channel name, e.g. deal-team."),
        "from": ADDRESS,
        "date": _str(WHEN, format="date-time"),
        "text": _str("The message as typed in a chat app."),
    }),
    "event": _obj({
        "subject": _str("The event title.", maxLength=SUMMARY_MAX),
        "start": _str(WHEN, format="date-time"),
        "end": _str(WHEN + " Not before start.", format="date-time"),
        "location": _str("A room, an address or a video-call link; empty for none.", maxLength=LOCATION_MAX),
        "attendees": _list(ADDRESS),
        "description": _str("The agenda, in markdown.", maxLength=DESCRIPTION_MAX),
    }),
}


def schema_for(kind: str, format: str) -> dict:
    key = require_kind_format(kind, format)
    return copy.deepcopy(SCHEMAS["document" if key in ("docx", "md", "pdf") else key])
