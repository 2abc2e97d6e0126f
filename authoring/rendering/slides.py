"""pptx content ↔ {"title", "slides": [{"title", "bullets", "notes"}]}, and the deck itself.

Content: an optional `# ` deck title before the first slide; one slide per `## ` heading;
`- ` bullets under it; a paragraph starting `Notes:` holds the speaker notes (paragraphs
after it belong to the notes too). Bullets, titles and notes are inline markdown.
"""

import datetime as dt
import io
import re

from .base import FIXED_CREATED, RenderError
from .markdown import inline_runs, list_items, parser, plain_text
from .wordfile import stable_zip

NOTES = re.compile(r"^Notes:\s*", re.IGNORECASE)


def _close(tokens, i: int) -> int:
    closer = tokens[i].type.replace("_open", "_close")
    return next(j for j in range(i + 1, len(tokens)) if tokens[j].type == closer and tokens[j].level == tokens[i].level)


def parse_slides(content: str) -> dict:
    tokens = parser().parse(content or "")
    deck: dict = {"title": "", "slides": []}
    in_notes = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line = tok.map[0] + 1 if tok.map else 0
        slide = deck["slides"][-1] if deck["slides"] else None
        if tok.type == "heading_open":
            text = tokens[i + 1].content.strip()
            if tok.tag == "h1":
                if deck["slides"] or deck["title"]:
                    raise RenderError(f"line {line}: '# {text}' — a deck has one '# ' title, before the first '## ' slide.")
                deck["title"] = text
            elif tok.tag == "h2":
                deck["slides"].append({"title": text, "bullets": [], "notes": ""})
                in_notes = False
            elif slide is None:
                raise RenderError(f"line {line}: '{tok.markup} {text}' before the first slide; each slide starts with '## <title>'.")
            else:
                slide["bullets"].append(text)  # a sub-heading inside a slide reads as one more line of it
            i = _close(tokens, i) + 1
            continue
        if (tok.type.endswith("_open") and tok.level == 0) or tok.type in ("fence", "code_block"):
            end = _close(tokens, i) if tok.type.endswith("_open") else i
            if slide is None:
                raise RenderError(f"line {line}: text before the first slide; each slide starts with '## <title>' "
                                  "(an optional '# <deck title>' may come first).")
            if tok.type in ("bullet_list_open", "ordered_list_open"):
                items = list_items(tokens, i + 1, end)
                if in_notes:
                    slide["notes"] += "\n\n" + "\n".join(f"- {x}" for x in items)
                else:
                    slide["bullets"].extend(items)
            elif tok.type == "paragraph_open" or tok.type in ("fence", "code_block"):
                text = tokens[i + 1].content if tok.type == "paragraph_open" else tok.content.rstrip("\n")
                if NOTES.match(text):
                    in_notes = True
                    rest = NOTES.sub("", text, count=1)
                    slide["notes"] = f"{slide['notes']}\n\n{rest}" if slide["notes"] else rest
                elif in_notes:
                    slide["notes"] += "\n\n" + text
                else:
                    slide["bullets"].append(text.replace("\n", " "))
            elif tok.type == "table_open":
                raise RenderError(f"line {line}: a table on slide {slide['title']!r}; slides hold a title, '- ' bullets and 'Notes:'.")
            i = end
        i += 1
    return deck


def slides_to_content(structured: dict) -> str:
    if not isinstance(structured, dict) or not isinstance(structured.get("slides"), list):
        raise RenderError("Expected {'title', 'slides': [{'title', 'bullets', 'notes'}]} for a pptx document.")
    parts: list[str] = []
    if str(structured.get("title") or "").strip():
        parts.append("# " + " ".join(str(structured["title"]).split()))
    for n, slide in enumerate(structured["slides"], 1):
        title = " ".join(str(slide.get("title") or "").split()) or f"Slide {n}"
        lines = [f"## {title}"]
        bullets = [" ".join(str(b).split()) for b in slide.get("bullets") or [] if str(b).strip()]
        section = ["\n".join(lines)]
        if bullets:
            section.append("\n".join(f"- {b}" for b in bullets))
        notes = str(slide.get("notes") or "").strip()
        if notes:
            section.append("Notes: " + notes)
        parts.append("\n\n".join(section))
    return "\n\n".join(parts) + ("\n" if parts else "")


def _fill(text_frame, lines: list[str]) -> None:
    for n, line in enumerate(lines):
        paragraph = text_frame.paragraphs[0] if n == 0 else text_frame.add_paragraph()
        for r in inline_runs(line):
            for n_piece, piece in enumerate(r.text.split("\n")):
                if n_piece:
                    paragraph.add_line_break()  # a line break in the text is one on the slide (<a:br/>)
                if not piece:
                    continue
                run = paragraph.add_run()
                run.text = piece
                if r.bold:
                    run.font.bold = True
                if r.italic:
                    run.font.italic = True


def _drop(placeholder) -> None:
    element = placeholder.element
    element.getparent().remove(element)


def render_pptx(deck: dict, *, author: str = "") -> bytes:
    import pptx  # imported on use: pages that only preview decks do not pay for it
    from pptx.util import Pt

    prs = pptx.Presentation()
    props = prs.core_properties
    props.title = plain_text(deck["title"]) or (plain_text(deck["slides"][0]["title"]) if deck["slides"] else "")
    props.author = props.last_modified_by = author
    props.created = props.modified = props.last_printed = dt.datetime(*FIXED_CREATED)
    props.revision = 1
    if deck["title"]:
        slide = prs.slides.add_slide(prs.slide_layouts[0])
        _fill(slide.shapes.title.text_frame, [deck["title"]])
        _drop(slide.placeholders[1])
    for spec in deck["slides"]:
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        _fill(slide.shapes.title.text_frame, [spec["title"]])
        body = slide.placeholders[1]
        if spec["bullets"]:
            _fill(body.text_frame, spec["bullets"])
            if len(spec["bullets"]) > 7:
                for paragraph in body.text_frame.paragraphs:
                    for run in paragraph.runs:
                        run.font.size = Pt(18 if len(spec["bullets"]) <= 10 else 14)
        else:
            _drop(body)
        if spec["notes"]:
            # Notes are read by a presenter, not rendered: markdown markers are dropped.
            paragraphs = [plain_text(p) for p in spec["notes"].split("\n\n") if p.strip()]
            slide.notes_slide.notes_text_frame.text = "\n".join(paragraphs)
    out = io.BytesIO()
    prs.save(out)
    return stable_zip(out.getvalue())
