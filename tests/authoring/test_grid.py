"""The spreadsheet grid: grid ↔ content conversion, the evaluation endpoint (computed by the
engine that writes the xlsx cached values), who may use it, and saving through the document form."""

import io
import json

import openpyxl
import pytest
from django.urls import reverse

from authoring import services
from authoring.rendering import RenderError, render_file
from authoring.rendering.grid import grid_clean, grid_evaluate, grid_from_content, grid_to_content
from tests.rendering.samples import CAP_TABLE

HX = {"HTTP_HX_REQUEST": "true"}

PRICE = """## Sheet: Price
|   | A | B |
|---|---|---|
| 1 | Item | Amount |
| 2 | Enterprise value | 13500000 |
| 3 | Net debt | -1500000 |
| 4 | Equity price | =SUM(B2:B3) |
Formats: B2:B4 #,##0

## Sheet: Terms
|   | A | B |
|---|---|---|
| 1 | Escrow | 10% |
| 2 | Escrow amount | =Price!B4*B1 |
Formats: B2 "$"#,##0.00
"""


def _grid(*sheets: tuple[str, list[list[str]], list[dict]]) -> dict:
    return {"sheets": [{"name": name, "rows": rows, "formats": formats} for name, rows, formats in sheets]}


@pytest.fixture
def sheet_doc(team, world):
    return services.document_create(world=world, user=team.author, path="Finance/Price.xlsx", format="xlsx", content=PRICE)


def _evaluate(client, doc, grid) -> dict:
    response = client.post(reverse("document-grid-evaluate", args=[doc.pk]), json.dumps(grid), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


# --- conversion ---------------------------------------------------------------------------------

def test_content_to_grid_and_back_keeps_sheets_formats_and_formulas():
    grid = grid_from_content(PRICE)
    assert [s["name"] for s in grid["sheets"]] == ["Price", "Terms"]
    assert grid["sheets"][0]["rows"][3] == ["Equity price", "=SUM(B2:B3)"]
    assert grid["sheets"][0]["formats"] == [{"range": "B2:B4", "number_format": "#,##0"}]
    assert grid["sheets"][1]["formats"] == [{"range": "B2", "number_format": '"$"#,##0.00'}]
    assert grid_to_content(grid) == PRICE
    assert grid_from_content(grid_to_content(grid_from_content(CAP_TABLE))) == grid_from_content(CAP_TABLE)


def test_grid_to_content_escapes_pipes_and_pads_rows_to_a_rectangle():
    content = grid_to_content(_grid(("Notes", [["a | b", "x"], ["only one"]], [])))
    assert "a \\| b" in content
    back = grid_from_content(content)
    assert back["sheets"][0]["rows"] == [["a | b", "x"], ["only one", ""]]


@pytest.mark.parametrize(("grid", "message"), [
    (_grid(("Q1/Q2", [["1"]], [])), "does not allow"),
    (_grid(("Price", [["1"]], []), ("price", [["2"]], [])), "Two sheets are called"),
    (_grid(("", [["1"]], [])), "has no name"),
    ({"sheets": []}, "no sheets"),
    (_grid(("Big", [[""] * 101], [])), "larger than the grid edits"),
    (_grid(("Price", [["1"]], [{"range": "B2:", "number_format": "0"}])), "Formats"),
])
def test_a_grid_that_cannot_be_saved_is_refused_in_plain_words(grid, message):
    with pytest.raises(RenderError, match=message):
        grid_to_content(grid)


# --- computed values -------------------------------------------------------------------------------

def test_values_are_the_ones_the_xlsx_file_caches():
    values = grid_evaluate(grid_from_content(PRICE))
    assert values.errors == []
    price, terms = values.sheets
    assert price["values"][3] == ["Equity price", "12,000,000"] and price["numbers"][3] == [False, True]
    assert terms["values"] == [["Escrow", "10%"], ["Escrow amount", "$1,200,000.00"]]
    book = openpyxl.load_workbook(io.BytesIO(render_file("file", "xlsx", PRICE, {}, path="Price.xlsx").data), data_only=True)
    assert book["Price"]["B4"].value == 12_000_000
    assert book["Terms"]["B2"].value == pytest.approx(1_200_000)


def test_a_formula_that_cannot_be_computed_is_marked_and_the_rest_still_computed():
    grid = _grid(("Price", [["1", "=FOO(A1)"], ["2", "=B1+1"], ["=A1+A2", "=SUM(A1:A2)"]], []))
    values = grid_evaluate(grid_clean(grid))
    assert [(e["sheet"], e["cell"]) for e in values.errors] == [(0, "B1")]
    assert "FOO()" in values.errors[0]["message"]
    rows = values.sheets[0]["values"]
    assert rows[0][1] == "#ERROR"
    assert rows[1][1] == "#VALUE!"  # reads the failed cell, as Excel would
    assert rows[2] == ["3", "3"]


def test_a_circular_reference_is_reported_against_a_cell():
    values = grid_evaluate(grid_clean(_grid(("S", [["=B1", "=A1"]], []))))
    assert values.errors and "circular reference" in values.errors[0]["message"]
    assert values.errors[0]["cell"] in ("A1", "B1")


# --- the evaluation endpoint ------------------------------------------------------------------------

def test_evaluate_returns_values_errors_and_the_content_to_save(client, team, sheet_doc):
    client.force_login(team.author)
    grid = grid_from_content(PRICE)
    grid["sheets"][0]["rows"][2][1] = "-2500000"  # a value the SUM depends on
    data = _evaluate(client, sheet_doc, grid)
    assert data["sheets"][0]["values"][3][1] == "11,000,000"
    assert data["sheets"][1]["values"][1][1] == "$1,100,000.00"  # the other sheet follows
    assert data["errors"] == [] and data["content_error"] == ""
    assert "| 3 | Net debt | -2500000 |" in data["content"] and 'Formats: B2 "$"#,##0.00' in data["content"]
    sheet_doc.refresh_from_db()
    assert sheet_doc.content == PRICE  # computing saves nothing


def test_evaluate_says_why_a_grid_cannot_be_saved(client, team, sheet_doc):
    client.force_login(team.author)
    data = _evaluate(client, sheet_doc, _grid(("Q1/Q2", [["1", "=A1*2"]], [])))
    assert data["content"] is None and "does not allow" in data["content_error"]
    bad_json = client.post(reverse("document-grid-evaluate", args=[sheet_doc.pk]), "{not json", content_type="application/json")
    assert bad_json.status_code == 400


def test_evaluate_access(client, team, other_team, sheet_doc):
    url = reverse("document-grid-evaluate", args=[sheet_doc.pk])
    body = json.dumps(grid_from_content(PRICE))
    client.force_login(other_team.author)
    assert client.post(url, body, content_type="application/json").status_code == 404
    client.force_login(team.reviewer)  # computes (read-only): nothing is written
    assert client.post(url, body, content_type="application/json").json()["sheets"][0]["values"][3][1] == "12,000,000"
    assert client.get(url).status_code == 405
    client.logout()
    assert client.post(url, body, content_type="application/json").status_code in (302, 403)


# --- the editor page -------------------------------------------------------------------------------

def test_author_sees_the_grid_with_computed_values(client, team, sheet_doc):
    client.force_login(team.author)
    page = client.get(reverse("document-editor", args=[sheet_doc.pk])).content.decode()
    assert 'data-grid data-evaluate-url="/documents/' in page
    # Each cell's text and computed value, in a table the grid component (Tabulator) replaces.
    assert '<td data-ref="B4" data-raw="=SUM(B2:B3)" class="grid-number">12,000,000</td>' in page
    assert 'role="tab"' in page and ">Terms</button>" in page
    assert "Text form" in page and 'name="content"' in page
    assert "Save document" in page and "js/grid.js" in page and "vendor/tabulator/tabulator-6.5.3.min.js" in page


def test_reviewer_sees_a_read_only_grid(client, team, sheet_doc):
    client.force_login(team.reviewer)
    page = client.get(reverse("document-editor", args=[sheet_doc.pk])).content.decode()
    assert "data-readonly" in page and 'class="grid-number">12,000,000<' in page and 'spellcheck="false" readonly' in page
    assert "Save document" not in page and "Add sheet" not in page and 'name="content"' not in page


def test_outsider_gets_404_on_the_grid_endpoints(client, other_team, sheet_doc):
    client.force_login(other_team.author)
    assert client.post(reverse("document-grid-from-text", args=[sheet_doc.pk]), {"content": PRICE}).status_code == 404


def test_load_text_into_grid(client, team, sheet_doc):
    client.force_login(team.author)
    url = reverse("document-grid-from-text", args=[sheet_doc.pk])
    fragment = client.post(url, {"content": PRICE.replace("13500000", "20000000")}, **HX).content.decode()
    assert fragment.lstrip().startswith('<div id="grid"') and 'class="grid-number">18,500,000<' in fragment
    assert "Save the document to keep it" in fragment and "data-unsaved" in fragment
    broken = client.post(url, {"content": "## Sheet: X\n| 1 | 2 |\n|---|---|\n| a | b |\n"}, **HX).content.decode()
    assert "The grid cannot show this spreadsheet yet" in broken and "header row" in broken
    sheet_doc.refresh_from_db()
    assert sheet_doc.content == PRICE


def test_saving_the_grid_content_goes_through_the_document_service(client, team, sheet_doc):
    client.force_login(team.author)
    grid = grid_from_content(PRICE)
    grid["sheets"][0]["rows"][3][1] = "=SUM(B2:B3)*2"
    content = _evaluate(client, sheet_doc, grid)["content"]
    url = reverse("document-editor", args=[sheet_doc.pk])
    payload = {"path": sheet_doc.path, "kind": "file", "format": "xlsx", "brief": "", "target_size": 100,
               "revision": sheet_doc.revision, "content": content}
    fragment = client.post(url, payload, **HX).content.decode()
    assert "Saved." in fragment and 'data-raw="=SUM(B2:B3)*2" class="grid-number">24,000,000<' in fragment
    sheet_doc.refresh_from_db()
    assert sheet_doc.content == content and sheet_doc.versions.count() == 2
    book = openpyxl.load_workbook(
        io.BytesIO(client.get(reverse("document-download", args=[sheet_doc.pk])).getvalue()), data_only=True
    )
    assert book["Price"]["B4"].value == 24_000_000

    # Someone saved meanwhile: the stale grid save is refused and what was typed is kept.
    stale = client.post(url, {**payload, "content": content.replace("*2", "*3")}, **HX)
    assert stale.status_code in (409, 422)
    page = stale.content.decode()
    assert 'data-raw="=SUM(B2:B3)*3"' in page and "data-unsaved" in page
    sheet_doc.refresh_from_db()
    assert "*3" not in sheet_doc.content
