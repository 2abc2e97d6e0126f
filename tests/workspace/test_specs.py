"""Tool definitions: the shape llm.client.chat(tools=...) takes, valid JSON schemas with
a description for every tool and argument, and schemas that match the functions."""

import inspect

import jsonschema

from workspace.tools import specs, tool_specs
from workspace.tools.base import REGISTRY


def test_tool_specs_shape_and_schemas():
    definitions = tool_specs(writable=True)
    assert len(definitions) == len(REGISTRY) == 23
    assert len({d["name"] for d in definitions}) == 23
    for definition in definitions:
        assert set(definition) == {"name", "description", "parameters"}
        assert len(definition["description"]) > 30, definition["name"]
        schema = definition["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (definition["name"], name)
        assert set(schema["required"]) <= set(schema["properties"])


def test_schemas_match_the_tool_functions():
    for name, tool in REGISTRY.items():
        signature = inspect.signature(tool.run)
        params = list(signature.parameters.values())[1:]  # after the workspace
        if any(p.kind is p.VAR_KEYWORD for p in params):
            continue
        properties = tool.spec.parameters["properties"]
        assert {p.name for p in params} == set(properties), name
        required = {p.name for p in params if p.default is inspect.Parameter.empty}
        assert required == set(tool.spec.parameters["required"]), name


def test_specs_carry_the_writes_flag():
    assert {s.name for s in specs(writable=True) if s.writes} == {
        "write_file", "delete_file", "send_email", "reply_email", "forward_email", "post_message", "reply_message",
        "create_event", "update_event"}
    assert not any(s.writes for s in specs(writable=False))
    assert [s.name for s in specs(writable=False)][:3] == ["list_files", "search_files", "read_file"]
