import io

import pptx
import pytest

from authoring.rendering import RenderError, parse_content, render_file, structured_to_content
from tests.rendering.samples import DECK


def test_pptx_has_titles_bullets_and_notes():
    rendered = render_file("file", "pptx", DECK, {}, path="Board/update.pptx")
    assert rendered.filename == "update.pptx"
    deck = pptx.Presentation(io.BytesIO(rendered.data))
    slides = list(deck.slides)
    assert [s.shapes.title.text for s in slides] == ["Project Falcon — Board update", "Deal status", "Risks", "Ask"]
    body = slides[1].placeholders[1].text_frame
    assert [p.text for p in body.paragraphs] == ["Exclusivity signed on 5 January", "Price: €48.5m enterprise value"]
    assert [r.text for r in body.paragraphs[0].runs if r.font.bold] == ["5 January"]
    assert [p.text for p in slides[2].placeholders[1].text_frame.paragraphs] == [
        "FCA approval could take 12 weeks",
        "Key-person risk: the CTO",
    ]
    assert slides[1].notes_slide.notes_text_frame.text == "Open with the timeline; the board asked about exclusivity last time."
    assert slides[2].notes_slide.notes_text_frame.text == "Mention the retention package."
    assert not slides[3].has_notes_slide
    assert deck.core_properties.title == "Project Falcon — Board update"


def test_pptx_render_is_byte_identical():
    assert render_file("file", "pptx", DECK, {}, path="d.pptx").data == render_file("file", "pptx", DECK, {}, path="d.pptx").data


def test_pptx_round_trip_content_structured_content():
    structured = parse_content("file", "pptx", DECK, {})
    assert structured["title"] == "Project Falcon — Board update"
    assert structured["slides"][0] == {
        "title": "Deal status",
        "bullets": ["Exclusivity signed on **5 January**", "Price: €48.5m enterprise value"],
        "notes": "Open with the timeline; the board asked about exclusivity last time.",
    }
    assert structured_to_content("file", "pptx", structured) == DECK
    again = {"title": "", "slides": [{"title": "Only", "bullets": [], "notes": "Para one.\n\nPara two."}]}
    assert parse_content("file", "pptx", structured_to_content("file", "pptx", again), {}) == again


@pytest.mark.parametrize(("content", "message"), [
    ("Intro text\n\n## Slide\n", "line 1: text before the first slide"),
    ("## One\n\n# Late title\n", "line 3: '# Late title' — a deck has one '# ' title"),
    ("## One\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "line 3: a table on slide 'One'"),
])
def test_invalid_deck_names_the_line(content, message):
    with pytest.raises(RenderError, match=message):
        parse_content("file", "pptx", content, {})
