"""Markdown content (docx, pdf, md files) ↔ a list of blocks, and inline text → styled runs.

Block form: {"blocks": [{"type", "level", "text", "items", "header", "rows"}]} where every
block carries all six keys (so a model's JSON schema can require them all); the keys that
do not apply to the type are empty: level 0, text "", items [], header [], rows [].
All text fields hold inline markdown (`**bold**`, `*italic*`), kept as written.

A document is laid out as its author wrote it: a line break in the source is a line break
in the docx and pdf (inline_runs), and a numbered list whose items are not numbered 1, 2,
3 … carries "numbers", each item's number as written ("4. Conditions", then "6. Payment"
stays 4 and 6: CommonMark alone would number them 4 and 5). The HTML preview does the same
(core.sanitize.document_markdown_to_safe_html).
"""

from dataclasses import dataclass

from markdown_it import MarkdownIt

from .base import RenderError

BLOCK_TYPES = ("heading", "paragraph", "bullets", "numbered", "table")

_md = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")


def parser() -> MarkdownIt:
    return _md


def block(type: str, *, level: int = 0, text: str = "", items=None, header=None, rows=None) -> dict:
    return {
        "type": type,
        "level": level,
        "text": text,
        "items": list(items or []),
        "header": list(header or []),
        "rows": [list(r) for r in rows or []],
    }


def _inline_after(tokens, i: int) -> str:
    return tokens[i + 1].content if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""


def _close_index(tokens, i: int) -> int:
    """Index of the token closing the block opened at i (same nesting level)."""
    opener = tokens[i]
    closer = opener.type.replace("_open", "_close")
    for j in range(i + 1, len(tokens)):
        if tokens[j].type == closer and tokens[j].level == opener.level:
            return j
    return len(tokens) - 1


def list_items(tokens, start: int, end: int) -> list[str]:
    """The items of a list token span, nested lists flattened into it in reading order.
    An item keeps its line breaks; an item of several paragraphs is joined by one."""
    items: list[str] = []
    parts: list[str] | None = None
    depth = 0
    for tok in tokens[start:end]:
        if tok.type == "list_item_open":
            if parts is not None and parts:
                items.append("\n".join(parts))
            parts = []
            depth += 1
        elif tok.type == "list_item_close":
            depth -= 1
            if parts:
                items.append("\n".join(parts))
            parts = [] if depth else None
        elif tok.type == "inline" and parts is not None:
            parts.append("\n".join(line.strip() for line in tok.content.split("\n")))
    return items


def table_cells(tokens, start: int, end: int) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    rows: list[list[str]] = []
    in_head = False
    for tok in tokens[start:end]:
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open" and not in_head:
            rows.append([])
        elif tok.type == "inline":
            (header if in_head else rows[-1]).append(tok.content)
    return header, rows


def item_numbers(tokens, start: int, end: int) -> list[int | None]:
    """The numbers the items of the ordered list opened at `start` were written with, one
    per item as list_items flattens them; an item of a list nested in it has None (it is
    shown as a bullet under its item, and numbers nothing)."""
    numbers: list[int | None] = []
    for tok in tokens[start + 1:end]:
        if tok.type == "list_item_open":
            if tok.level != tokens[start].level + 1:
                numbers.append(None)
            else:
                previous = next((n for n in reversed(numbers) if n is not None), 0)
                numbers.append(int(tok.info) if tok.info.isdigit() else previous + 1)
    return numbers


def block_numbers(block: dict, count: int) -> list[int | None]:
    """Each item's number in a numbered block: as written ("numbers"), else 1, 2, 3 …;
    None for an item of a list nested in a numbered item (a bullet)."""
    numbers = list(block.get("numbers") or [])
    return [*numbers, *range(len(numbers) + 1, count + 1)]


def parse_blocks(content: str) -> dict:
    tokens = _md.parse(content or "")
    blocks: list[dict] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            blocks.append(block("heading", level=int(tok.tag[1]), text=_inline_after(tokens, i)))
            i = _close_index(tokens, i)
        elif tok.type == "paragraph_open":
            blocks.append(block("paragraph", text=_inline_after(tokens, i)))
            i = _close_index(tokens, i)
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            end = _close_index(tokens, i)
            kind = "bullets" if tok.type == "bullet_list_open" else "numbered"
            blocks.append(block(kind, items=list_items(tokens, i + 1, end)))
            if kind == "numbered":
                numbers = item_numbers(tokens, i, end)
                if numbers != list(range(1, len(numbers) + 1)):
                    blocks[-1]["numbers"] = numbers
            i = end
        elif tok.type == "table_open":
            end = _close_index(tokens, i)
            header, rows = table_cells(tokens, i + 1, end)
            blocks.append(block("table", header=header, rows=rows))
            i = end
        elif tok.type in ("fence", "code_block") and tok.content.strip():
            blocks.append(block("paragraph", text=tok.content.rstrip("\n")))
        # blockquotes are transparent: their paragraphs and lists are read as above; rules are dropped.
        i += 1
    return {"blocks": blocks}


# --- structured → markdown ---------------------------------------------------------------

def _one_line(text: str) -> str:
    return " ".join(str(text or "").split())


def _item(marker: str, text: str) -> str:
    """A list item in markdown: its lines kept, continuation lines indented under the marker."""
    lines = [" ".join(line.split()) for line in str(text or "").split("\n")]
    lines = [line for line in lines if line] or [""]
    return "\n".join([f"{marker} {lines[0]}", *(" " * (len(marker) + 1) + line for line in lines[1:])])


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


def table_markdown(header: list[str], rows: list[list[str]]) -> str:
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    if not width:
        return ""
    head = [*header, *[""] * (width - len(header))]
    lines = ["| " + " | ".join(_cell(c) for c in head) + " |", "|" + "---|" * width]
    for row in rows:
        padded = [*row, *[""] * (width - len(row))]
        lines.append("| " + " | ".join(_cell(c) for c in padded) + " |")
    return "\n".join(lines)


def blocks_to_markdown(blocks: list[dict]) -> str:
    """Markdown in the documented conventions. Lenient about a model's slips: a missing
    field is taken as empty, a list given only `text` becomes a one-item list."""
    if not isinstance(blocks, list):
        raise RenderError("Expected 'blocks' to be a list of block objects.")
    out: list[str] = []
    # Two lists of one type in a row would merge into one on re-reading: the second
    # switches marker (`*` for `-`, `1)` for `1.`), which starts a new list in CommonMark.
    previous_list: tuple[str, int] | None = None  # (type, marker variant) of the block just written
    for raw in blocks:
        b = raw if isinstance(raw, dict) else {"type": "paragraph", "text": str(raw)}
        kind = b.get("type", "paragraph")
        text = str(b.get("text") or "")
        written = None
        if kind == "heading":
            level = min(max(int(b.get("level") or 1), 1), 6)
            if text.strip():
                written = "#" * level + " " + _one_line(text)
        elif kind in ("bullets", "numbered"):
            items = [str(x) for x in b.get("items") or []] or ([text] if text.strip() else [])
            if items:
                variant = 1 - previous_list[1] if previous_list and previous_list[0] == kind else 0
                if kind == "bullets":
                    written = "\n".join(_item("*" if variant else "-", x) for x in items)
                else:
                    numbers = block_numbers(b, len(items))
                    written = "\n".join(_item(f"{n}{')' if variant else '.'}", x) if n is not None else _item("   -", x)
                                        for n, x in zip(numbers, items, strict=False))
                out.append(written)
                previous_list = (kind, variant)
                continue
        elif kind == "table":
            header = [str(c) for c in b.get("header") or []]
            rows = [[str(c) for c in r] for r in b.get("rows") or []]
            if not header and rows:
                header, rows = rows[0], rows[1:]
            written = table_markdown(header, rows) or text.strip() or None
        elif text.strip():
            written = text.strip()
        if written:
            out.append(written)
            previous_list = None
    return "\n\n".join(out) + ("\n" if out else "")


# --- inline markdown → runs --------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False


def inline_runs(text: str) -> list[Run]:
    """Styled runs of one line of inline markdown; a link keeps its text (and its URL
    in parentheses when it differs), a soft break becomes a space."""
    runs: list[Run] = []
    bold = italic = 0
    href_stack: list[str] = []
    link_text: list[str] = []
    parsed = _md.parseInline(text or "")
    children = parsed[0].children if parsed and parsed[0].children else []
    for tok in children:
        piece = None
        if tok.type == "strong_open":
            bold += 1
        elif tok.type == "strong_close":
            bold -= 1
        elif tok.type == "em_open":
            italic += 1
        elif tok.type == "em_close":
            italic -= 1
        elif tok.type == "link_open":
            href_stack.append(str(tok.attrs.get("href", "")))
            link_text.clear()
        elif tok.type == "link_close":
            href = href_stack.pop() if href_stack else ""
            if href and href != "".join(link_text) and not href.startswith("mailto:"):
                piece = f" ({href})"
        elif tok.type == "text":
            piece = tok.content
            link_text.append(tok.content)
        elif tok.type == "code_inline":
            runs.append(Run(tok.content, bool(bold), bool(italic), code=True))
        elif tok.type == "softbreak":
            piece = "\n"  # a line break in the source is one in the document
        elif tok.type == "hardbreak":
            piece = "\n"
        elif tok.type == "image":
            piece = tok.content
        if piece:
            if runs and runs[-1].bold == bool(bold) and runs[-1].italic == bool(italic) and not runs[-1].code:
                runs[-1] = Run(runs[-1].text + piece, runs[-1].bold, runs[-1].italic)
            else:
                runs.append(Run(piece, bool(bold), bool(italic)))
    return runs


def plain_text(text: str) -> str:
    return "".join(r.text for r in inline_runs(text))
