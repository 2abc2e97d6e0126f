import jsonschema
import pytest

from authoring.rendering import content_schema, parse_content, render_file, structured_to_content, structured_to_metadata
from llm import scripted
from tests.rendering.samples import CAP_TABLE, CHATS, CSV, DECK, EMAILS, EVENTS, MEMO

KINDS = [("file", "docx"), ("file", "md"), ("file", "pdf"), ("file", "xlsx"), ("file", "pptx"), ("file", "csv"),
         ("email", ""), ("chat", ""), ("event", "")]
SAMPLES = {
    ("file", "docx"): (MEMO, {}), ("file", "md"): (MEMO, {}), ("file", "pdf"): (MEMO, {}), ("file", "xlsx"): (CAP_TABLE, {}),
    ("file", "pptx"): (DECK, {}), ("file", "csv"): (CSV, {}), ("email", ""): (EMAILS[0].content, EMAILS[0].metadata),
    ("chat", ""): (CHATS[1].content, CHATS[1].metadata), ("event", ""): (EVENTS[0].content, EVENTS[0].metadata),
}


def _walk(schema: dict):
    yield schema
    for child in schema.get("properties", {}).values():
        yield from _walk(child)
    if "items" in schema:
        yield from _walk(schema["items"])


@pytest.mark.parametrize(("kind", "fmt"), KINDS)
def test_schema_is_in_the_subset_structured_outputs_accept(kind, fmt):
    schema = content_schema(kind, fmt)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    for node in _walk(schema):
        assert not {"oneOf", "anyOf", "allOf", "$ref", "patternProperties"} & set(node)
        assert node["type"] in ("object", "array", "string", "integer")
        if node["type"] == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])  # strict mode: every property required


@pytest.mark.parametrize(("kind", "fmt"), KINDS)
def test_parsed_samples_match_their_schema_and_round_trip(kind, fmt):
    content, metadata = SAMPLES[(kind, fmt)]
    structured = parse_content(kind, fmt, content, metadata)
    jsonschema.validate(structured, content_schema(kind, fmt))
    again = parse_content(
        kind, fmt, structured_to_content(kind, fmt, structured), {**metadata, **structured_to_metadata(kind, fmt, structured)}
    )
    assert again == structured


@pytest.mark.parametrize(("kind", "fmt"), KINDS)
def test_what_the_scripted_model_drafts_renders(kind, fmt):
    # The demo drafts with the `scripted` endpoint: whatever minimal instance of the
    # schema it returns must become content that renders, not an error.
    for seed in range(4):
        drafted = scripted.answer(messages=[{"role": "user", "content": f"Draft it {seed}"}], schema=content_schema(kind, fmt)).structured
        content = structured_to_content(kind, fmt, drafted)
        metadata = structured_to_metadata(kind, fmt, drafted)
        assert render_file(kind, fmt, content, metadata, path="Drafts/doc").data


def test_files_have_no_metadata_to_draft():
    assert structured_to_metadata("file", "docx", {"blocks": []}) == {}


def test_schema_is_a_fresh_copy():
    content_schema("file", "xlsx")["properties"].clear()
    assert content_schema("file", "xlsx")["properties"]
