"""The spreadsheet grid of an xlsx document (templates/authoring/_grid_editor.html, static/js/grid.js).

The grid edits the document's content through its text form: every change is posted here,
computed by the same Workbook the xlsx download uses, and answered with the values to show
and the content to save; saving is the document form's ordinary save (document_update with
its base revision), so a stale edit is refused exactly as in the text editor. Nothing here
writes: any member of the project may compute a grid (a reviewer sees it read-only).
"""

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from authoring import selectors
from authoring.rendering import RenderError
from authoring.rendering.grid import grid_clean, grid_evaluate, grid_from_content, grid_to_content
from authoring.rendering.sheets import col_letter
from core.exceptions import ApplicationError

GRID_TEMPLATE = "authoring/_grid_editor.html"


def grid_context(content: str, saved_content: str) -> dict:
    """What the grid template shows for a content: per sheet its name, formats and rows of
    cells (what was typed, what is shown, whether it is a number or could not be computed),
    and whether it differs from the saved content (leaving the page then asks first)."""
    unsaved = (content or "").strip() != (saved_content or "").strip()
    try:
        structured = grid_from_content(content or "")
    except RenderError as error:
        return {"parse_error": error.message, "sheets": [], "errors": [], "unsaved": unsaved}
    if not structured["sheets"]:
        structured = {"sheets": [{"name": "Sheet1", "rows": [[""] * 5 for _ in range(10)], "formats": []}]}
    values = grid_evaluate(structured)
    failed = {(e["sheet"], e["cell"]): e["message"] for e in values.errors if e["cell"]}
    sheets = []
    for n, (sheet, shown) in enumerate(zip(structured["sheets"], values.sheets, strict=True)):
        width = max((len(r) for r in sheet["rows"]), default=0)
        rows = []
        for r, row in enumerate(sheet["rows"], 1):
            cells = []
            for c, text in enumerate(row, 1):
                ref = _ref(r, c)
                cells.append({
                    "ref": ref, "raw": text, "shown": shown["values"][r - 1][c - 1],
                    "number": shown["numbers"][r - 1][c - 1], "error": failed.get((n, ref), ""),
                })
            rows.append({"number": r, "cells": cells})
        sheets.append({
            "index": n, "name": sheet["name"], "rows": rows, "columns": [col_letter(c) for c in range(1, width + 1)],
            "formats_json": json.dumps(sheet["formats"]),
        })
    return {"parse_error": "", "sheets": sheets, "errors": values.errors, "unsaved": unsaved}


def _ref(r: int, c: int) -> str:
    return f"{col_letter(c)}{r}"


@require_POST
def document_grid_evaluate(request: HttpRequest, pk: int) -> JsonResponse:
    """The grid posted as JSON → the values to show, the problems, and the content to save
    (null, with the reason, when the grid cannot be saved as it is)."""
    selectors.document_get_for_user(user=request.user, pk=pk)  # 404 outside the project
    try:
        data = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"error": "The grid could not be read; reload the page."}, status=400)
    try:
        structured = grid_clean(data)
    except ApplicationError as error:
        return JsonResponse({"sheets": [], "errors": [{"message": error.message, "sheet": None, "cell": None}],
                             "content": None, "content_error": error.message})
    values = grid_evaluate(structured)
    try:
        content, content_error = grid_to_content(structured), ""
    except ApplicationError as error:
        content, content_error = None, error.message
    return JsonResponse({**values.as_dict(), "content": content, "content_error": content_error})


@require_POST
def document_grid_from_text(request: HttpRequest, pk: int) -> HttpResponse:
    """The grid rebuilt from the text form (the content textarea), for the author who pasted
    or typed a table: nothing is saved until the document form is."""
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    content = request.POST.get("content", "")
    context = {"document": document, "grid": grid_context(content, document.content), "from_text": True}
    return render(request, GRID_TEMPLATE + "#grid", context)
