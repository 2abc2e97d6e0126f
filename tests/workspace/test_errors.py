"""execute() never raises for bad input: every class of bad call is an error result the
model can read and act on, and nothing is written."""

import json
import socket

import pytest

from workspace.models import OverlayEntry
from workspace.tools import execute


@pytest.mark.parametrize("name", ["rm_rf", "", None, 42, "READ_FILE"])
def test_unknown_tool(ws, name):
    result = execute(workspace=ws, name=name, arguments={})
    assert result.is_error and result.text.startswith("Unknown tool ")
    assert "Available tools: list_files, search_files, read_file, write_file, delete_file, list_emails" in result.text


def test_arguments_may_be_a_json_string(run):
    assert run("read_file", json.dumps({"path": "Deal/Notes.md"})).startswith("File: Deal/Notes.md (md)")
    assert run.json("list_channels", "")["channels"]  # an empty string is no arguments
    assert run.json("list_files", None)["folder"] == "/"


@pytest.mark.parametrize(("arguments", "expected"), [
    ('{"path": "Deal/Notes.md"', "The arguments for read_file are not valid JSON"),
    ("[1, 2]", "must be a JSON object of named parameters, not list"),
    ('"Deal/Notes.md"', "must be a JSON object of named parameters, not str"),
    (7, "must be a JSON object of named parameters, not int"),
    ({"path": "Deal/Notes.md", "pages": 2}, "Additional properties are not allowed ('pages' was unexpected). Parameters: path, page?"),
    ({}, "Invalid arguments for read_file: 'path' is a required property. Parameters: path, page? ('?' = optional)."),
    ({"path": 5}, "Invalid arguments for read_file: path must be text, not int."),
    ({"path": "Deal/Notes.md", "page": 0}, "page must be at least 1."),
    ({"path": "Deal/Notes.md", "page": "2"}, "page must be a whole number, not str."),
    ({"path": "x" * 600}, "path is too long (600 characters; at most 500)."),
])
def test_bad_arguments(run, arguments, expected):
    text = run("read_file", arguments, error=True)
    assert expected in text
    assert "x" * 600 not in text  # an oversized value is not echoed back


@pytest.mark.parametrize(("name", "arguments"), [
    ("read_file", {"path": "Deal/Notes.md", "page": 1.0}),
    ("list_emails", {"limit": 2.0, "offset": 1.0}),
    ("read_channel", {"channel": "deal-team", "limit": 3.0}),
    ("read_chat_thread", {"id": "Chat/deal-team/2026-03-02 Ben", "offset": 1.0}),
    ("list_events", {"limit": 1.0}),
    ("search_events", {"query": "signing", "offset": 0.0}),
])
def test_a_whole_number_sent_as_a_float_is_taken_as_that_number(run, name, arguments):
    """JSON Schema's integer admits 2.0, and models send it: it used to fail every paging tool
    "unexpectedly" (a float in a slice), so retrying never helped."""
    as_ints = {key: int(value) if isinstance(value, float) else value for key, value in arguments.items()}
    assert run(name, arguments) == run(name, as_ints)


def test_a_fraction_where_a_whole_number_is_asked_is_a_clear_error(run):
    assert "page must be a whole number" in run("read_file", {"path": "Deal/Notes.md", "page": 1.5}, error=True)


@pytest.mark.parametrize(("path", "expected"), [
    ("../Deal/Notes.md", "not a valid data-room path: no '..'"),
    ("Deal/../../etc/passwd", "not a valid data-room path: no '..'"),
    ("~/secrets", "is absolute"),
    ("C:/Windows/win.ini", "is absolute"),
    ("Deal\\Notes.md", "contains a backslash"),
    ("Deal/Notes.md\x00.png", "NUL character"),
    ("Deal/\tNotes.md", "control characters"),
    ("Deal//Notes.md", "no '..', '.' or empty folder names"),
    ("./Deal/Notes.md", "no '..', '.' or empty folder names"),
    ("   ", "is empty"),
])
def test_bad_paths_are_errors_for_every_tool_taking_one(run, path, expected):
    for name, arguments in [
        ("read_file", {"path": path}), ("write_file", {"path": path, "content": "x"}), ("delete_file", {"path": path}),
        ("read_email", {"id": path}), ("read_thread", {"id": path}), ("reply_email", {"id": path, "body": "x"}),
        ("read_chat_thread", {"id": path}), ("reply_message", {"id": path, "text": "x"}), ("update_event", {"id": path, "location": "x"}),
    ]:
        text = run(name, arguments, error=True)
        assert expected in text, (name, text)
    assert "not a valid data-room path" in run("list_files", {"folder": "Deal/.."}, error=True)
    assert not OverlayEntry.objects.exists()


def test_oversized_arguments_and_content(run, ws):
    huge = json.dumps({"path": "Work/Big.md", "content": "a" * 300_000})
    assert run("write_file", huge, error=True).startswith("The arguments are too large (300,")
    text = run("write_file", {"path": "Work/Big.md", "content": "a" * 200_001}, error=True)
    assert text.startswith("Invalid arguments for write_file: content is too long (200,001 characters; at most 200,000).")
    assert "aaaa" not in text
    assert run("send_email", {"to": ["a@b.co"] * 51, "subject": "x", "body": "y"}, error=True).startswith(
        "Invalid arguments for send_email: to has too many items (51; at most 50).")
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()


def test_unstorable_text_is_an_error(run, ws):
    assert "NUL character" in run("write_file", {"path": "Work/A.md", "content": "a\x00b"}, error=True)
    assert "invalid Unicode" in run("post_message", '{"channel": "finance", "text": "\\ud800"}', error=True)
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()


def test_write_file_errors(run, ws):
    assert run("write_file", {"path": "Work/Memo.exe", "content": "x"}, error=True) == (
        "Cannot write 'Work/Memo.exe': the name must end in one of .md, .csv, .docx, .xlsx, .pptx.")
    assert run("write_file", {"path": "Legal/Opinions/Opinion.pdf", "content": "x"}, error=True).startswith("Cannot write")
    assert run("write_file", {"path": "Mail/Inbox/2026-02-20 Price", "content": "x"}, error=True).startswith("Cannot write")
    text = run("write_file", {"path": "Work/Model.xlsx", "content": "## Sheet: A\n|   | A |\n|---|---|\n| 1 | =FOO(1) |\n"}, error=True)
    assert text.startswith(
        "The content is not a valid xlsx file: line 4: sheet 'A' cell A1: =FOO(1) uses FOO(), which is not an Excel function"
    )
    assert "'## Sheet: <name>' heading per sheet" in text
    text = run("write_file", {"path": "Work/Data.csv", "content": 'a,"b\nc'}, error=True)
    assert text.startswith("The content is not a valid csv file: line ")
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()


def test_a_bug_in_a_tool_is_an_error_result_not_an_exception(ws, monkeypatch):
    from workspace.tools.base import REGISTRY, Tool

    def broken(_ws):
        raise RuntimeError("boom")

    monkeypatch.setitem(REGISTRY, "list_channels", Tool(REGISTRY["list_channels"].spec, broken))
    result = execute(workspace=ws, name="list_channels", arguments={})
    assert result.is_error and result.text.startswith("list_channels failed unexpectedly") and "boom" not in result.text


def test_no_tool_opens_a_network_connection(run, monkeypatch):
    """Every tool runs with outgoing connections refused; none fails for it."""
    run("list_files")  # the workspace is loaded over the test's open database connection

    def refuse(*args, **kwargs):
        raise AssertionError("a tool tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    run("read_file", {"path": "Inbox/README.md"})
    run("search_files", {"query": "http"})
    run("read_file", {"path": "Finance/Cap table.xlsx"})
    run("read_thread", {"id": "Mail/Inbox/2026-02-20 Price"})
    run("read_channel", {"channel": "finance"})
    run("list_events")


def test_a_path_from_the_data_rooms_root_or_naming_a_folder_is_read_as_the_path(run):
    """Archipelago's files name data-room paths from the root (/Deal/Investment memo.docx), and
    agents used to them send those: they were refused as "absolute"; a trailing "/" was blamed
    on "'..', '.' or empty folder names"."""
    plain = run("read_file", {"path": "Deal/Notes.md"})
    assert run("read_file", {"path": "/Deal/Notes.md"}) == plain == run("read_file", {"path": "Deal/Notes.md/"})
    assert run("read_file", {"path": "/etc/passwd"}, error=True).startswith("No file at 'etc/passwd'")
