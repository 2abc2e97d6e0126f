"""What every tool shares: its spec, its result, the error a tool raises for the model to
read, the registry, and the helpers that keep results small (paging, capped lists)."""

import json
from collections.abc import Callable
from dataclasses import dataclass

PAGE_CHARS = 6_000  # one page of a file, an email or a thread
MAX_RESULT_CHARS = 16_000  # no result is ever longer than this, whatever a tool builds
SNIPPET_CHARS = 160


class ToolError(Exception):
    """Bad input or a missing item: the message goes back to the model as the tool result."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict  # a JSON schema of the arguments object
    writes: bool = False

    def as_dict(self) -> dict:
        """The shape llm.client.chat(tools=...) takes."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable  # run(workspace, **arguments) -> str


REGISTRY: dict[str, Tool] = {}


def tool(name: str, description: str, properties: dict, *, required: tuple[str, ...] = (), writes: bool = False):
    """Register a tool. `properties` is the JSON schema of each argument; unknown
    arguments are refused so a misspelt one is reported rather than silently ignored."""
    parameters = {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}

    def register(func: Callable) -> Callable:
        REGISTRY[name] = Tool(ToolSpec(name, description, parameters, writes), func)
        return func

    return register


def require_writable(ws):
    """The workspace's overlay, or a tool error when the workspace is read-only."""
    if ws.overlay is None:
        raise ToolError("This workspace is read-only (the world as authored, with no scratch overlay): "
                        "files, mail, chat and calendar can be read but nothing can be written, sent or posted.")
    return ws.overlay


# --- argument schemas shared by several tools --------------------------------------------------

def text_arg(description: str, *, max_length: int = 500, min_length: int = 0) -> dict:
    schema = {"type": "string", "description": description, "maxLength": max_length}
    if min_length:
        schema["minLength"] = min_length
    return schema


def int_arg(description: str, *, minimum: int, maximum: int, default: int) -> dict:
    return {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum, "default": default}


PAGE_ARG = int_arg("Which page of the text to return (pages are about 6,000 characters).", minimum=1, maximum=10_000, default=1)
LIMIT_ARG = int_arg("How many items to return at most.", minimum=1, maximum=100, default=20)
OFFSET_ARG = int_arg("How many items to skip (for the next batch of a long list).", minimum=0, maximum=100_000, default=0)
ADDRESSES_ARG = {
    "type": "array",
    "description": 'Email addresses, each "Name <name@example.com>" or "name@example.com".',
    "items": {"type": "string", "minLength": 3, "maxLength": 320},
    "maxItems": 50,
}


# --- output helpers ------------------------------------------------------------------------------

def to_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def snippet(text: str, needle: str = "", width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` around the first occurrence of `needle`, on one line."""
    flat = " ".join((text or "").split())
    at = flat.lower().find(needle.lower()) if needle else -1
    if at < 0:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(0, at - width // 3)
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def split_pages(text: str, size: int = PAGE_CHARS) -> list[str]:
    """The text cut into pages of at most `size` characters, at a line break when one is
    near the end of the window, so a page rarely ends mid-line."""
    pages: list[str] = []
    start = 0
    while start < len(text) or not pages:
        end = min(len(text), start + size)
        if end < len(text):
            newline = text.rfind("\n", start + size * 3 // 4, end)
            if newline > start:
                end = newline + 1
        pages.append(text[start:end])
        start = end
    return pages


def paged(text: str, *, page: int, header: str, again: str) -> str:
    """One page of `text` under `header`, saying how to get the next one. `again` is the
    call to repeat, e.g. 'read_file with path="Deal/LOI.docx"'."""
    pages = split_pages(text)
    if page > len(pages):
        raise ToolError(f"Page {page} does not exist: there {'is 1 page' if len(pages) == 1 else f'are {len(pages)} pages'}. "
                        f"Call {again} and page=1 to {len(pages)}.")
    if len(pages) == 1:
        return f"{header}\n\n{pages[0]}" if header else pages[0]
    body = pages[page - 1].rstrip("\n")
    more = (f"Call {again} and page={page + 1} for the next page." if page < len(pages) else "This is the last page.")
    title = f"{header} — page {page} of {len(pages)}" if header else f"Page {page} of {len(pages)}"
    return f"{title}\n\n{body}\n\n[page {page} of {len(pages)}. {more}]"


JSON_BUDGET = 14_000  # a structured result is trimmed to whole items under this, so it stays valid JSON


def fit(result: dict, key: str, *, keep: str = "first") -> int:
    """Trim the list result[key] to whole items, dropping from the end (keep="first") or
    from the start (keep="last"), until the result fits JSON_BUDGET. Returns how many
    items were dropped, so the caller can say how to get them."""
    items = result[key]
    room = JSON_BUDGET - len(to_json({**result, key: []}))
    sizes = [len(to_json(item)) + 2 for item in items]
    order = range(len(items)) if keep == "first" else range(len(items) - 1, -1, -1)
    kept = 0
    for n in order:
        if room - sizes[n] < 0 and kept:
            break
        room -= sizes[n]
        kept += 1
    result[key] = items[:kept] if keep == "first" else items[len(items) - kept :]
    return len(items) - kept


def page_into(result: dict, key: str, items: list, *, offset: int, limit: int, again: str) -> dict:
    """result[key] = items[offset:offset + limit], trimmed to whole items that fit; when
    more follow, "next_offset" and a note naming the call (`again`, e.g. 'list_files with
    folder="Deal"') that gets them. Returns `result`."""
    result[key] = items[offset : offset + limit]
    shown = len(result[key]) - fit(result, key)
    if offset + shown < len(items):
        result["next_offset"] = offset + shown
        result["note"] = f"{len(items) - offset - shown} more not shown: call {again} and offset={offset + shown}."
    return result


def clip(text: str, limit: int) -> str:
    """Text cut at `limit` characters, saying how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def cap(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return text[:MAX_RESULT_CHARS] + "\n[… result cut at 16,000 characters; narrow the request (a smaller limit, a page, a search).]"
