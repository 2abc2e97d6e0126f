import datetime as dt
import io

import openpyxl
import pytest

from authoring.rendering import RenderError, parse_content, render_file, structured_to_content
from tests.rendering.samples import CAP_TABLE


def _open(content: str, *, data_only: bool):
    data = render_file("file", "xlsx", content, {}, path="Deal/Model.xlsx").data
    return openpyxl.load_workbook(io.BytesIO(data), data_only=data_only)


def test_formula_cells_carry_their_computed_values():
    book = _open(CAP_TABLE, data_only=True)
    assert book.sheetnames == ["Cap table", "Valuation"]
    cap = book["Cap table"]
    assert [c.value for c in cap[1]] == ["Holder", "Shares", "Percent"]
    assert cap["B4"].value == 10000000
    assert cap["C2"].value == pytest.approx(0.6)
    assert cap["C4"].value == pytest.approx(1.0)
    valuation = book["Valuation"]
    assert valuation["B2"].value == pytest.approx(48_500_000)  # cross-sheet reference
    assert valuation["B4"].value == pytest.approx(50_000_000)
    assert valuation["B5"].value == dt.datetime(2026, 2, 15)
    assert valuation["B6"].value == dt.datetime(2026, 5, 16)  # a date serial shown through its yyyy-mm-dd format
    assert valuation["B7"].value == "no"
    assert valuation["B8"].value == 5_000_000


def test_formulas_are_kept_as_formulas():
    book = _open(CAP_TABLE, data_only=False)
    assert book["Cap table"]["B4"].value == "=SUM(B2:B3)"
    assert book["Cap table"]["C2"].value == "=B2/B4"
    assert book["Valuation"]["B2"].value == "=B1*'Cap table'!B4"
    assert book["Cap table"]["B2"].value == 6000000


def test_number_formats_are_applied():
    book = _open(CAP_TABLE, data_only=True)
    cap, valuation = book["Cap table"], book["Valuation"]
    assert cap["B2"].number_format == "#,##0"
    assert cap["B4"].number_format == "#,##0"
    assert cap["C3"].number_format == "0.0%"
    assert cap["A2"].number_format == "General"
    assert valuation["B1"].number_format == "#,##0.00"
    assert valuation["B5"].number_format == "yyyy-mm-dd"  # implied by the ISO date
    assert valuation["B6"].number_format == "yyyy-mm-dd"  # from the Formats line


def test_typed_cell_text():
    content = "## Sheet: Types\n|   | A |\n|---|---|\n| 1 | 12.5% |\n| 2 | $1,200.50 |\n| 3 | 6,000,000 |\n| 4 | TRUE |\n| 5 | '00123 |\n"
    sheet = _open(content, data_only=True)["Types"]
    assert sheet["A1"].value == pytest.approx(0.125) and sheet["A1"].number_format == "0.0%"
    assert sheet["A2"].value == pytest.approx(1200.5) and sheet["A2"].number_format == '"$"#,##0.00'
    assert sheet["A3"].value == 6000000
    assert sheet["A4"].value is True
    assert sheet["A5"].value == "00123"


def test_xlsx_render_is_byte_identical():
    first = render_file("file", "xlsx", CAP_TABLE, {}, path="m.xlsx").data
    assert first == render_file("file", "xlsx", CAP_TABLE, {}, path="m.xlsx").data


def test_xlsx_round_trip_content_structured_content():
    structured = parse_content("file", "xlsx", CAP_TABLE, {})
    assert structured["sheets"][0] == {
        "name": "Cap table",
        "rows": [["Holder", "Shares", "Percent"], ["Founders", "6000000", "=B2/B4"], ["Investors", "4000000", "=B3/B4"],
                 ["Total", "=SUM(B2:B3)", "=SUM(C2:C3)"]],
        "formats": [{"range": "B2:B4", "number_format": "#,##0"}, {"range": "C2:C4", "number_format": "0.0%"}],
    }
    assert structured_to_content("file", "xlsx", structured) == CAP_TABLE
    assert parse_content("file", "xlsx", structured_to_content("file", "xlsx", structured), {}) == structured


def test_rows_may_skip_numbers_and_the_gap_stays_empty():
    content = "## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | x | 1 |\n| 4 | y | =B1+B3 |\n"
    structured = parse_content("file", "xlsx", content, {})
    assert structured["sheets"][0]["rows"] == [["x", "1"], ["", ""], ["", ""], ["y", "=B1+B3"]]
    assert _open(content, data_only=True)["S"]["B4"].value == 1


def test_drafted_sheet_names_are_made_valid():
    structured = {"sheets": [{"name": "Q1/Q2: [draft] figures for the board pack", "rows": [["a"]], "formats": []},
                             {"name": "q1q2 draft figures for the board pack", "rows": [], "formats": []}]}
    names = [s["name"] for s in parse_content("file", "xlsx", structured_to_content("file", "xlsx", structured), {})["sheets"]]
    assert all(len(n) <= 31 and not set(n) & set("[]:*?/\\") for n in names)
    assert len({n.lower() for n in names}) == 2


@pytest.mark.parametrize(("content", "message"), [
    ("|   | A |\n|---|---|\n| 1 | x |\n", r"line 1: text before the first '## Sheet"),
    ("## Sheet: S\nJust a paragraph.\n", r"line 2: under '## Sheet: S' expected a pipe table"),
    ("## Sheet: S\n| x | y |\n|---|---|\n| 1 | 2 |\n",
     r"line 2: the header row of sheet 'S' must be an empty cell then the column letters A"),
    ("## Sheet: S\n|   | A | C |\n|---|---|---|\n| 1 | 2 | 3 |\n", "column letters A | B"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| one | 2 |\n", "line 4: the first cell of each row"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 2 | x |\n| 1 | y |\n", "line 5: row 1 of sheet 'S' comes after row 2"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | x | y |\n", "line 4: this row of sheet 'S' has 2 cells"),
    ("## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | 2 | =A1+A9 |\n",
     r"line 4: sheet 'S' cell B1: =A1\+A9 refers to A9, outside the sheet's table \(A1:B1\)"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | =Other!A1 |\n", "refers to sheet 'OTHER', which this workbook does not have"),
    ("## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | =B1 | =A1 |\n", "circular reference"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | =SUM(A2: |\n", "line 4: sheet 'S' cell A1: =SUM\\(A2: is not a formula Excel can read"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | =FROBNICATE(2) |\n",
     r"line 4: sheet 'S' cell A1: =FROBNICATE\(2\) uses FROBNICATE\(\), which is not an Excel function"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | =TODAY() |\n", "TODAY\\(\\), whose value changes"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | =SUM(Revenue) |\n", "named ranges are not supported"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | 2026-02-30 |\n", "line 4: sheet 'S' cell A1: '2026-02-30' is not a real date"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | 2 |\nFormats: A1\n", "line 5: a Formats line lists"),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 1 | 2 |\nFormats: 0.00\n", "line 5"),
    ("## Sheet: S\n\n## Sheet: s\n", "line 3: sheet name 's' is used twice"),
    ("## Sheet: A/B\n", r"contains one of \["),
    ("## Sheet: S\n|   | A |\n|---|---|\n| 900000 | x |\n", "line 4: row 900000 of sheet 'S' is beyond the 100,000 rows"),
    ("# Model\n", "expected a '## Sheet: <name>' heading"),
])
def test_invalid_spreadsheet_content_names_the_problem(content, message):
    with pytest.raises(RenderError, match=message):
        parse_content("file", "xlsx", content, {})


def test_render_refuses_what_parse_refuses():
    with pytest.raises(RenderError, match="outside the sheet's table"):
        render_file("file", "xlsx", "## Sheet: S\n|   | A |\n|---|---|\n| 1 | =A5 |\n", {}, path="x.xlsx")


def test_division_by_zero_is_cached_as_the_excel_error():
    content = "## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | 0 | =1/A1 |\n| 2 | | =IFERROR(B1,\"n/a\") |\n"
    sheet = _open(content, data_only=True)["S"]
    assert sheet["B1"].value == "#DIV/0!"
    assert sheet["B2"].value == "n/a"


def test_whole_column_and_lookup_functions():
    content = ("## Sheet: S\n|   | A | B | C |\n|---|---|---|---|\n| 1 | alpha | 10 | =SUM(B:B) |\n"
               "| 2 | beta | 20 | =VLOOKUP(\"beta\",A1:B3,2,FALSE) |\n"
               "| 3 | gamma | 30 | =INDEX(B1:B3,MATCH(\"gamma\",A1:A3,0)) |\n| 4 | | | =ROUND(AVERAGE(B1:B3)/7,2) |\n")
    sheet = _open(content, data_only=True)["S"]
    assert sheet["C1"].value == 60
    assert sheet["C2"].value == 20
    assert sheet["C3"].value == 30
    assert sheet["C4"].value == pytest.approx(2.86)


def test_an_empty_sheet_still_makes_a_workbook():
    book = _open("## Sheet: Notes\n", data_only=True)
    assert book.sheetnames == ["Notes"]


def test_formulas_filled_down_compute_each_row_with_its_own_references():
    # One parsed shape serves a whole column: anchored ($A$1) and relative references,
    # and rows 9→10 where the engine's alphabetical input order flips (A10 before A9).
    rows = [f"| {r} | {r * r} | =A{r + 1}-A{r} | =A{r}+$A$1 | {'=A1' if r == 1 else f'=D{r - 1}+A{r}'} |" for r in range(1, 13)]
    content = "## Sheet: S\n|   | A | B | C | D |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    content = content.replace("| =A13-A12 |", "|  |")
    sheet = _open(content, data_only=True)["S"]
    assert [sheet[f"B{r}"].value for r in range(1, 12)] == [2 * r + 1 for r in range(1, 12)]
    assert [sheet[f"C{r}"].value for r in range(1, 13)] == [r * r + 1 for r in range(1, 13)]
    assert sheet["D12"].value == sum(r * r for r in range(1, 13))
