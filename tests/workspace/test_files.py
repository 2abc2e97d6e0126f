"""Drive tools: list, search and read every format, with paging."""

import json
import re

from authoring import services as authoring_services
from tests.workspace.conftest import LOI, OPINION, PAYMENTS, Runner
from workspace.tools import Workspace


def test_list_files_top_level_shows_folders_only(run):
    listing = run.json("list_files")
    assert listing == {"folder": "/", "subfolders": ["Board", "Deal", "Finance", "Inbox", "Legal"], "total_files": 0, "offset": 0,
                       "files": []}


def test_list_files_in_a_folder(run):
    assert run.json("list_files", {"folder": "Finance/"}) == {
        "folder": "Finance",
        "subfolders": [],
        "total_files": 2,
        "offset": 0,
        "files": [
            {"path": "Finance/Cap table.xlsx", "format": "xlsx", "chars": 284},
            {"path": "Finance/Payments.csv", "format": "csv", "chars": len(PAYMENTS)},
        ],
    }
    assert run.json("list_files", {"folder": "Legal"}) == {"folder": "Legal", "subfolders": ["Legal/Opinions"], "total_files": 0,
                                                           "offset": 0, "files": []}


def test_list_files_recursive_lists_files_only_not_mail_chat_or_events(run):
    paths = [f["path"] for f in run.json("list_files", {"recursive": True})["files"]]
    assert paths == [
        "Board/Q1 update.pptx", "Deal/Letter of intent.docx", "Deal/Notes.md", "Finance/Cap table.xlsx",
        "Finance/Payments.csv", "Inbox/README.md", "Legal/Opinions/Opinion.pdf",
    ]
    assert [f["path"] for f in run.json("list_files", {"folder": "Legal", "recursive": True})["files"]] == ["Legal/Opinions/Opinion.pdf"]


def test_list_files_unknown_folder_is_an_error_naming_the_folders(run):
    text = run("list_files", {"folder": "Mail"}, error=True)
    assert "No folder 'Mail'" in text and "Board, Deal, Finance, Inbox, Legal" in text


def test_search_files_by_name_and_content(run):
    by_name = run.json("search_files", {"query": "CAP table"})
    assert by_name["matches"] == 1
    assert by_name["results"][0]["path"] == "Finance/Cap table.xlsx" and by_name["results"][0]["matched"] == "name"

    by_content = run.json("search_files", {"query": "landlord's consent"})
    assert [(r["path"], r["matched"]) for r in by_content["results"]] == [("Legal/Opinions/Opinion.pdf", "content")]
    assert "landlord's consent on a change of control" in by_content["results"][0]["snippet"]

    # every word must appear, in any order
    assert [r["path"] for r in run.json("search_files", {"query": "control change"})["results"]] == [
        "Board/Q1 update.pptx", "Legal/Opinions/Opinion.pdf"]
    assert run.json("search_files", {"query": "landlord", "in_content": False})["matches"] == 0
    assert run.json("search_files", {"query": "zebra"}) == {"query": "zebra", "matches": 0, "offset": 0, "results": []}


def test_search_files_finds_what_read_file_shows_in_a_sheet(run):
    """A sheet's total is a formula in its source (=SUM(B2:B3)); read_file shows 10,000,000,
    and an agent searching for the figure it read must find the file."""
    found = run.json("search_files", {"query": "10,000,000"})
    assert [(r["path"], r["matched"]) for r in found["results"]] == [("Finance/Cap table.xlsx", "content")]
    assert "| 4 | Total | 10,000,000 | 100.0% |" in found["results"][0]["snippet"]
    assert [r["path"] for r in run.json("search_files", {"query": "60.0%"})["results"]] == ["Finance/Cap table.xlsx"]
    assert [r["path"] for r in run.json("search_files", {"query": "=SUM(B2:B3)"})["results"]] == ["Finance/Cap table.xlsx"]


def test_read_xlsx_shows_values_and_formulas(run):
    text = run("read_file", {"path": "Finance/Cap table.xlsx"})
    assert text.startswith("File: Finance/Cap table.xlsx (xlsx)\n\n## Sheet: Cap table (4 rows × 3 columns)")
    assert "| 4 | Total | 10,000,000 | 100.0% |" in text
    assert "B4 = 10000000  (formula =SUM(B2:B3))" in text
    assert "C2 = 0.6, shown as 60.0%  (formula =B2/B4)" in text
    assert "C4 = 1, shown as 100.0%  (formula =SUM(C2:C3))" in text
    assert "## Sheet: Notes (1 row × 1 column)\n|   | A |\n|---|---|\n| 1 | Fully diluted |" in text


def test_read_pptx_shows_slides_bullets_and_notes(run):
    assert run("read_file", {"path": "Board/Q1 update.pptx"}) == (
        "File: Board/Q1 update.pptx (pptx)\n\n"
        "Deck title: Q1 board update\n\n"
        "## Slide 1: Highlights\n- Revenue up 20%\n- Two new customers\nSpeaker notes: Mention the Northwind renewal.\n\n"
        "## Slide 2: Risks\n- Change of control clause"
    )


def test_read_docx_md_pdf_csv_as_text(run):
    assert run("read_file", {"path": "Deal/Letter of intent.docx"}) == f"File: Deal/Letter of intent.docx (docx)\n\n{LOI}"
    assert run("read_file", {"path": "Legal/Opinions/Opinion.pdf"}) == f"File: Legal/Opinions/Opinion.pdf (pdf)\n\n{OPINION}"
    assert run("read_file", {"path": "Finance/Payments.csv"}) == f"File: Finance/Payments.csv (csv)\n\n{PAYMENTS}"


def test_read_file_pages_a_long_file(team, data_room, ws):
    lines = [f"Line {n:04d}: " + "lorem ipsum dolor sit amet " * 3 for n in range(150)]
    long_text = "\n".join(lines) + "\n"
    assert len(long_text) > 12_000
    authoring_services.document_create(world=data_room, user=team.author, path="Deal/Long.md", content=long_text)
    run = Runner(Workspace(data_room, ws.overlay))

    first = run("read_file", {"path": "Deal/Long.md"})
    total = int(re.search(r"page 1 of (\d+)", first).group(1))
    assert total == 3
    assert first.startswith("File: Deal/Long.md (md) — page 1 of 3\n\nLine 0000")
    assert first.endswith('[page 1 of 3. Call read_file with path="Deal/Long.md" and page=2 for the next page.]')
    assert len(first) < 6_300

    bodies = []
    for page in range(1, total + 1):
        text = run("read_file", {"path": "Deal/Long.md", "page": page})
        bodies.append(text.split("\n\n", 1)[1].rsplit("\n\n[page", 1)[0])
    assert "This is the last page." in text
    assert "\n".join(bodies) + "\n" == long_text  # pages cut at line ends, nothing lost or repeated

    error = run("read_file", {"path": "Deal/Long.md", "page": 4}, error=True)
    assert error.startswith("Page 4 does not exist: there are 3 pages.")


def test_a_sheet_that_cannot_be_computed_is_still_readable(team, data_room, ws):
    broken = "## Sheet: S\n|   | A |\n|---|---|\n| 1 | =A9 |\n"
    authoring_services.document_create(world=data_room, user=team.author, path="Finance/Broken.xlsx", content=broken)
    text = Runner(Workspace(data_room)).__call__("read_file", {"path": "Finance/Broken.xlsx"})
    assert "could not be laid out" in text and "outside the sheet's table" in text and broken in text


def test_read_file_missing_suggests_close_paths(run):
    text = run("read_file", {"path": "Deal/Letter of intent.doc"}, error=True)
    assert text == ("No file at 'Deal/Letter of intent.doc'. Did you mean: 'Deal/Letter of intent.docx'? "
                    "Use list_files or search_files to find files.")
    # an email's id is not a file
    assert "No file at" in run("read_file", {"path": "Mail/Inbox/2026-02-20 Price"}, error=True)


def test_results_are_compact_json_where_structured(run):
    text = run("list_files", {"folder": "Deal"})
    assert json.loads(text)["files"][0]["path"] == "Deal/Letter of intent.docx"
    assert "\n" not in text


def test_long_listings_and_searches_page_by_offset(run, ws):
    """300 files in one folder: list_files showed 122 and told the agent to "list a subfolder"
    (there was none), and search_files stopped at 20 with no way to the rest."""
    for n in range(300):
        run("write_file", {"path": f"Contracts/Lease {n:03d}.md", "content": f"Lease {n:03d}: the rent is reviewed yearly. " * 8})
    seen, offset = [], 0
    while offset is not None:
        page = run.json("list_files", {"folder": "Contracts", "offset": offset})
        assert page["total_files"] == 300 and page["files"]
        seen += [f["path"] for f in page["files"]]
        offset = page.get("next_offset")
        if offset is not None:
            assert f"call list_files with folder=\"Contracts\" and offset={offset}" in page["note"]
    assert seen == [f"Contracts/Lease {n:03d}.md" for n in range(300)]
    found, offset = [], 0
    while offset is not None:
        page = run.json("search_files", {"query": "rent reviewed", "offset": offset})
        assert page["matches"] == 300 and len(page["results"]) <= 20
        found += [r["path"] for r in page["results"]]
        offset = page.get("next_offset")
    assert sorted(found) == seen
