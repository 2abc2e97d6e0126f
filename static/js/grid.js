// The spreadsheet grid of an xlsx document (templates/authoring/_grid_editor.html).
//
// Each sheet is a Tabulator grid (static/vendor/tabulator/, MIT; no eval, so it runs under the
// CSP). A cell's value in Tabulator is what the author typed (a value, or a formula starting
// with "="); what the cell shows is the value the server computed with the same engine that
// writes the xlsx file's cached values, kept beside it in this script's model and painted by
// the cell formatter. Every change posts the whole grid to the evaluate URL, which answers with
// the values, the problems and the document's content (the pipe-table text form) to put in the
// form's content field; saving is the document form's own save, held back until the last change
// has been converted.
//
// Keyboard (the APG data grid pattern): one cell of the sheet is in the tab order; arrow keys
// move, Shift+arrows extend the range, Enter/F2/typing edit, Escape undoes, Tab leaves. The
// cells themselves take focus (Tabulator would keep it on its scroll box, which a screen reader
// cannot follow), so the focused cell is what is announced, with its row and column headers.
(function () {
  "use strict";
  if (window.taskwrightGrid) return;  // the script comes again with every re-rendered grid
  window.taskwrightGrid = true;

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; }
    catch (e) { return ""; }
  }

  function colLetter(n) {
    var s = "";
    while (n > 0) { var m = (n - 1) % 26; s = String.fromCharCode(65 + m) + s; n = Math.floor((n - 1) / 26); }
    return s;
  }

  function colNumber(letters) {
    var n = 0;
    for (var i = 0; i < letters.length; i++) n = n * 26 + (letters.charCodeAt(i) - 64);
    return n;
  }

  function parseRange(text) {
    var m = /^([A-Z]{1,3})(\d+)(?::([A-Z]{1,3})(\d+))?$/.exec(text || "");
    if (!m) return null;
    var r1 = +m[2], c1 = colNumber(m[1]), r2 = m[3] ? +m[4] : r1, c2 = m[3] ? colNumber(m[3]) : c1;
    return { r1: Math.min(r1, r2), c1: Math.min(c1, c2), r2: Math.max(r1, r2), c2: Math.max(c1, c2) };
  }

  // Tabulator is loaded once, the first time a grid needs it (the grid can arrive in an htmx swap).
  var tabulatorLoading = null;
  function loadTabulator(root) {
    if (window.Tabulator) return Promise.resolve();
    if (!tabulatorLoading) {
      tabulatorLoading = new Promise(function (resolve, reject) {
        var css = document.createElement("link");
        css.rel = "stylesheet"; css.href = root.dataset.tabulatorCss;
        document.head.appendChild(css);
        var script = document.createElement("script");
        script.src = root.dataset.tabulatorJs;
        script.onload = function () { resolve(); };
        script.onerror = function () { tabulatorLoading = null; reject(new Error("The grid component could not be loaded.")); };
        document.head.appendChild(script);
      });
    }
    return tabulatorLoading;
  }

  function setup(root) {
    if (root.dataset.gridReady) return;
    root.dataset.gridReady = "1";
    var readonly = root.hasAttribute("data-readonly");
    var state = { changed: root.hasAttribute("data-unsaved"), stale: false, pending: null, seq: 0, invalid: "",
                  typed: null, timer: null };
    root._grid = state;
    var formula = root.querySelector("[data-grid-formula]");
    var address = root.querySelector("[data-grid-address]");
    var rangeLabel = root.querySelector("[data-grid-range]");
    var formatSelect = root.querySelector("[data-grid-format]");
    var statusBox = root.querySelector("[data-grid-status]");
    var errorsBox = root.querySelector("[data-grid-errors]");
    if (!formula) return;  // the text form could not be read: only the message shows

    // --- the model: per sheet what was typed, what is shown, and the Tabulator showing it -------
    function readSheet(panel) {
      var sheet = { panel: panel, rows: [], shown: [], numbers: [], errors: {}, table: null, width: 0 };
      panel.querySelectorAll("[data-grid-host] tbody tr").forEach(function (tr) {
        var raw = [], shown = [], numbers = [];
        tr.querySelectorAll("td").forEach(function (td) {
          raw.push(td.dataset.raw || "");
          shown.push(td.textContent);
          numbers.push(td.classList.contains("grid-number"));
          if (td.dataset.error) sheet.errors[td.dataset.ref] = td.dataset.error;
        });
        sheet.rows.push(raw); sheet.shown.push(shown); sheet.numbers.push(numbers);
      });
      sheet.width = sheet.rows.length ? sheet.rows[0].length : panel.querySelectorAll("[data-grid-host] thead th").length;
      return sheet;
    }
    var sheets = Array.prototype.map.call(root.querySelectorAll("[data-grid-sheet]"), readSheet);

    function tabs() { return Array.prototype.slice.call(root.querySelectorAll("[data-grid-tab]")); }
    function tabOf(sheet) { return document.getElementById(sheet.panel.getAttribute("aria-labelledby")); }
    function active() { return sheets.filter(function (s) { return !s.panel.hidden; })[0] || sheets[0]; }
    function sheetName(sheet) {
      var field = sheet.panel.querySelector("[data-grid-sheet-name]");
      return (field ? field.value : tabOf(sheet).textContent).trim();
    }
    function ref(r, c) { return colLetter(c) + r; }
    function editing() { return !!root.querySelector(".grid-cell-editor"); }

    // --- painting a cell: the computed value, right-aligned numbers, errors marked ---------------
    function mark(el, sheet, r, c) {
      var reference = ref(r, c);
      var error = sheet.errors[reference];
      el.dataset.ref = reference;
      el.dataset.raw = sheet.rows[r - 1][c - 1];
      el.classList.toggle("grid-number", !!sheet.numbers[r - 1][c - 1]);
      el.classList.toggle("grid-error", !!error);
      if (error) { el.setAttribute("aria-invalid", "true"); el.title = error; }
      else { el.removeAttribute("aria-invalid"); el.removeAttribute("title"); }
    }
    function paint(el, sheet, r, c) {
      mark(el, sheet, r, c);
      el.textContent = sheet.shown[r - 1][c - 1];
    }

    function where(cell) {  // a Tabulator cell component → {r, c}
      return { r: +cell.getRow().getIndex(), c: +cell.getField().slice(1) };
    }

    function cellFormatter(sheet) {
      return function (cell) {
        var at = where(cell), el = cell.getElement();
        var anchor = sheet.anchor || { r: 1, c: 1 };
        el.tabIndex = at.r === anchor.r && at.c === anchor.c ? 0 : -1;  // one tab stop per sheet
        mark(el, sheet, at.r, at.c);
        // A text node, never a string: Tabulator puts a formatter's string into innerHTML.
        return document.createTextNode(sheet.shown[at.r - 1][at.c - 1]);
      };
    }

    function rowHeaderFormatter(cell) {
      cell.getElement().setAttribute("role", "rowheader");
      return document.createTextNode(String(cell.getValue()));
    }
    function cornerFormatter() {
      var label = document.createElement("span");
      label.className = "sr-only"; label.textContent = "Row";
      return label;
    }

    // --- the editor: a labelled text box with what the cell holds ---------------------------------
    function cellEditor(sheet) {
      return function (cell, onRendered, success, cancel) {
        var at = where(cell);
        var input = document.createElement("input");
        input.className = "grid-cell-editor";
        input.autocomplete = "off"; input.spellcheck = false;
        input.setAttribute("aria-label", sheetName(sheet) + " cell " + ref(at.r, at.c));
        var typed = state.typed;
        state.typed = null;
        input.value = typed !== null ? typed : (cell.getValue() || "");
        formula.value = input.value;
        var done = false;
        function finish(move) {
          if (done) return;
          done = true;
          var raw = input.value.trim();
          if (raw === (cell.getValue() || "")) cancel(); else success(raw);
          if (move) moveFrom(sheet, at, move[0], move[1]);  // leaving by a click or Tab elsewhere keeps that focus
        }
        onRendered(function () {
          input.focus();
          if (typed !== null) input.setSelectionRange(input.value.length, input.value.length); else input.select();
        });
        input.addEventListener("input", function () { formula.value = input.value; });
        input.addEventListener("keydown", function (event) {
          event.stopPropagation();  // the editor's keys are its own, not the grid's navigation
          if (event.key === "Enter") { event.preventDefault(); finish([event.shiftKey ? -1 : 1, 0]); }
          else if (event.key === "Tab") { event.preventDefault(); finish([0, event.shiftKey ? -1 : 1]); }
          else if (event.key === "Escape") {
            event.preventDefault();
            done = true;
            cancel();
            formula.value = cell.getValue() || "";
            focusAnchor(sheet);
          }
        });
        input.addEventListener("blur", function () { finish(null); });  // the edit is kept, as in a spreadsheet
        return input;
      };
    }

    // --- Tabulator, one per sheet, built when its tab is first shown -------------------------------
    function rowData(sheet, r) {
      var data = { _r: r };
      for (var c = 1; c <= sheet.width; c++) data["c" + c] = sheet.rows[r - 1][c - 1];
      return data;
    }
    function columnDef(sheet, c) {
      return { title: colLetter(c), field: "c" + c, headerSort: false, headerHozAlign: "center", width: 120, minWidth: 48,
               formatter: cellFormatter(sheet), editor: cellEditor(sheet), editable: !readonly };
    }

    function build(sheet) {
      if (sheet.table || sheet.panel.hidden) return;
      var host = sheet.panel.querySelector("[data-grid-host]");
      var columns = [];
      for (var c = 1; c <= sheet.width; c++) columns.push(columnDef(sheet, c));
      var data = sheet.rows.map(function (_row, i) { return rowData(sheet, i + 1); });
      var table = new window.Tabulator(host, {
        data: data, index: "_r", columns: columns, layout: "fitData", maxHeight: "70vh",
        // Every row in the DOM (a screen reader reads what is there) unless the sheet is large.
        renderVertical: sheet.rows.length * sheet.width > 5000 ? "virtual" : "basic",
        rowHeader: { field: "_r", cssClass: "grid-row-number", headerSort: false, resizable: false, frozen: true, hozAlign: "right", width: 48,
                     formatter: rowHeaderFormatter, titleFormatter: cornerFormatter },
        selectableRange: 1, selectableRangeColumns: true, selectableRangeRows: true,
        selectableRangeClearCells: false,  // Delete is handled below: Tabulator's would blank the row numbers too
        editTriggerEvent: "dblclick",
        clipboard: "copy", clipboardCopyRowRange: "range", clipboardCopyStyled: false,
        clipboardCopyConfig: { rowHeaders: false, columnHeaders: false, formatCells: false },
        // Tab leaves the sheet (no keyboard trap); Home/End move within the row (below).
        keybindings: { navPrev: false, navNext: false, scrollToStart: false, scrollToEnd: false },
      });
      sheet.table = table;
      host.setAttribute("aria-labelledby", tabOf(sheet).id);
      host.setAttribute("aria-describedby", "grid-keys-help");
      table.on("tableBuilt", function () {
        // Tabulator makes its scroll box and header focusable (a tab stop that announces nothing,
        // and a child a grid may not have); only the anchor cell is.
        host.querySelectorAll(".tabulator-tableholder, .tabulator-header").forEach(function (el) { el.removeAttribute("tabindex"); });
        // Tabulator still focuses its scroll box after a click or an edit (and Chrome lets a
        // scroll box take focus): hand the focus on to the selected cell.
        host.querySelector(".tabulator-tableholder").addEventListener("focus", function () { focusAnchor(sheet); });
        sheet.built = true;
        if (sheet.anchor) setRange(sheet, sheet.anchor.r, sheet.anchor.c, false);
        select(sheet);
      });
      // Tabulator re-renders the rows when the page is resized, which drops the focus on the body:
      // put it back on the selected cell.
      table.on("renderStarted", function () { sheet.hadFocus = host.contains(document.activeElement); });
      table.on("renderComplete", function () {
        if (sheet.hadFocus && !host.contains(document.activeElement)) focusAnchor(sheet);
        sheet.hadFocus = false;
      });
      // A click on a row or column header selects without focusing anything: focus the sheet.
      host.addEventListener("click", function () { if (!host.contains(document.activeElement)) focusAnchor(sheet); });
      function rangeMoved() { select(sheet); if (sheet.built && host.contains(document.activeElement)) focusAnchor(sheet); }
      table.on("rangeChanged", rangeMoved);
      table.on("rangeAdded", rangeMoved);  // a click starts a new range, laid out a moment later
      table.on("cellEdited", function (cell) {
        var at = where(cell);
        var raw = cell.getValue() === undefined || cell.getValue() === null ? "" : String(cell.getValue());
        sheet.rows[at.r - 1][at.c - 1] = raw;
        // Until the server answers, a changed cell shows what was typed.
        sheet.shown[at.r - 1][at.c - 1] = raw.charAt(0) === "=" ? "…" : raw;
        paint(cell.getElement(), sheet, at.r, at.c);
        changed();
      });
    }

    function anchorCell(sheet) {
      if (!sheet.table) return null;
      var m = sheet.table.modules.selectRange;  // Tabulator 6.5: the range's first cell is the "active" one
      var cell = m && m.getActiveCell && m.getActiveCell();
      if (!cell) return null;
      cell = cell.getComponent();
      // A whole row selected (by its number) starts on the row header: its first cell stands in.
      return cell.getField() === "_r" ? cell.getRow().getCell("c1") : cell;
    }
    // Tabulator reports a range change a moment late (when it lays the range out), possibly after
    // an editor opened: focus never leaves an open editor for the cell under it.
    function focusAnchor(sheet) {
      if (editing()) return;
      var cell = anchorCell(sheet);
      if (cell && !sheet.panel.hidden) cell.getElement().focus();
    }
    function cellOf(sheet, el) {  // a cell element → its Tabulator component
      var at = parseRange(el.dataset.ref || "");
      var row = at && sheet.table.getRow(at.r1);
      return row ? row.getCell("c" + at.c1) : null;
    }
    function setRange(sheet, r, c, extendTo) {
      var row = sheet.table && sheet.table.getRow(r);
      var cell = row && row.getCell("c" + c);
      var range = sheet.table && sheet.table.getRanges()[0];
      if (!cell || !range) return;
      if (extendTo) range.setEndBound(cell); else range.setBounds(cell);
    }
    function moveFrom(sheet, a, dr, dc) {
      var r = Math.min(Math.max(a.r + dr, 1), sheet.rows.length), c = Math.min(Math.max(a.c + dc, 1), sheet.width);
      setRange(sheet, r, c, false);
      focusAnchor(sheet);
    }

    // The selection: the formula bar, the address, the range a number format goes to, and the
    // one cell in the tab order.
    function rangeText(sheet) {
      var range = sheet.table && sheet.table.getRanges()[0];
      if (!range || range.getLeftEdge() === undefined) return "A1";
      var top = range.getTopEdge() + 1, bottom = range.getBottomEdge() + 1;
      var left = Math.max(range.getLeftEdge(), 1), right = Math.max(range.getRightEdge(), 1);  // column 0 is the row header
      var first = ref(top, left), last = ref(bottom, right);
      return first === last ? first : first + ":" + last;
    }
    function select(sheet) {
      var cell = anchorCell(sheet);
      if (!cell) return;
      var at = where(cell);
      var before = sheet.anchor;
      sheet.anchor = at;
      if (before && (before.r !== at.r || before.c !== at.c)) {
        var old = sheet.table.getRow(before.r);
        var oldCell = old && old.getCell("c" + before.c);
        if (oldCell) oldCell.getElement().tabIndex = -1;
      }
      cell.getElement().tabIndex = 0;
      address.textContent = ref(at.r, at.c);
      if (!editing()) formula.value = sheet.rows[at.r - 1][at.c - 1];
      if (rangeLabel) rangeLabel.textContent = rangeText(sheet);
    }

    // --- serialising and computing ----------------------------------------------------------------
    function serialise() {
      return { sheets: sheets.map(function (sheet) {
        return { name: sheetName(sheet), rows: sheet.rows, formats: formatsOf(sheet) };
      }) };
    }

    function say(text, isError) {
      statusBox.textContent = text;
      statusBox.classList.toggle("grid-status-error", !!isError);
    }

    function showErrors(errors) {
      errorsBox.textContent = "";
      errors.forEach(function (error) {
        var li = document.createElement("li");
        li.className = "message error";
        li.textContent = error.message + " ";
        var sheet = error.sheet !== null ? sheets[error.sheet] : null;
        var range = sheet && parseRange(error.cell);
        if (range) {
          var go = document.createElement("button");
          go.type = "button"; go.className = "link"; go.textContent = "Go to " + sheetName(sheet) + " " + error.cell;
          go.addEventListener("click", function () { activate(sheet); setRange(sheet, range.r1, range.c1, false); focusAnchor(sheet); });
          li.appendChild(go);
        }
        errorsBox.appendChild(li);
      });
    }

    function repaint(sheet) {
      if (!sheet.table) return;
      sheet.table.getRows().forEach(function (row) {
        row.getCells().forEach(function (cell) {
          var field = cell.getField();
          if (!field || field.charAt(0) !== "c") return;
          var el = cell.getElement();
          if (el.classList.contains("tabulator-editing")) return;  // the author is typing there
          var at = where(cell);
          if (el.textContent !== sheet.shown[at.r - 1][at.c - 1] || el.dataset.raw !== sheet.rows[at.r - 1][at.c - 1] ||
              el.classList.contains("grid-number") !== !!sheet.numbers[at.r - 1][at.c - 1] || !!sheet.errors[ref(at.r, at.c)] !== el.classList.contains("grid-error")) {
            paint(el, sheet, at.r, at.c);
          }
        });
      });
    }

    function apply(data) {
      (data.sheets || []).forEach(function (values, n) {
        var sheet = sheets[n];
        if (!sheet || values.values.length !== sheet.rows.length) return;
        sheet.shown = values.values;
        sheet.numbers = values.numbers;
        sheet.errors = {};
      });
      (data.errors || []).forEach(function (error) {
        if (error.sheet !== null && error.cell && sheets[error.sheet]) sheets[error.sheet].errors[error.cell] = error.message;
      });
      sheets.forEach(repaint);
      showErrors(data.errors || []);
      var content = document.getElementById("id_content");
      if (data.content !== null && data.content !== undefined) {
        if (content) content.value = data.content;
        state.invalid = "";
      } else {
        state.invalid = data.content_error || "The grid cannot be saved as it is.";
      }
      var problems = (data.errors || []).length;
      if (state.invalid) say("Not saved yet: " + state.invalid, true);
      else if (problems) say(problems + " cell" + (problems > 1 ? "s" : "") + " could not be computed (marked in red). Unsaved changes.", true);
      else say("All values computed. Unsaved changes: choose “Save document” to keep them.", false);
    }

    function evaluate() {
      if (readonly) return Promise.resolve();
      clearTimeout(state.timer);
      var seq = ++state.seq;
      state.stale = false;
      say("Computing…", false);
      var request = fetch(root.dataset.evaluateUrl, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(serialise())
      }).then(function (response) {
        if (!response.ok) throw new Error(response.status === 404 ? "This document no longer exists, or you no longer have access." : "The server could not compute the sheet (" + response.status + ").");
        return response.json();
      }).then(function (data) {
        if (seq === state.seq) apply(data);
      }).catch(function (error) {
        if (seq !== state.seq) return;
        state.invalid = error.message + " Nothing was saved; try again.";
        say(state.invalid, true);
      }).then(function () {
        if (seq === state.seq) state.pending = null;
      });
      state.pending = request;
      return request;
    }
    // Several cells change at once (a cleared range, a pasted block): one request for them all.
    function changed() {
      state.changed = true; state.stale = true;
      clearTimeout(state.timer);
      state.timer = setTimeout(function () { if (state.stale) evaluate(); }, 0);
    }
    state.settled = function settled() {
      if (state.stale) evaluate();
      var pending = state.pending;
      return pending ? pending.then(settled) : Promise.resolve();
    };

    // --- sheets --------------------------------------------------------------------------------------
    function activate(sheet) {
      sheets.forEach(function (s) {
        var on = s === sheet, tab = tabOf(s);
        s.panel.hidden = !on;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
      });
      if (sheet.table) { sheet.table.redraw(); select(sheet); } else build(sheet);
      renderFormats(sheet);
    }

    function addSheet() {
      var names = sheets.map(function (s) { return sheetName(s).toLowerCase(); });
      var n = sheets.length + 1;
      while (names.indexOf(("Sheet" + n).toLowerCase()) >= 0) n++;
      var id = "grid-sheet-new-" + Date.now();
      var tab = document.createElement("button");
      tab.type = "button"; tab.setAttribute("role", "tab"); tab.id = id + "-tab"; tab.dataset.gridTab = "";
      tab.setAttribute("aria-controls", id); tab.textContent = "Sheet" + n;
      root.querySelector("[role=tablist]").appendChild(tab);
      var panel = document.createElement("div");
      panel.className = "grid-sheet"; panel.setAttribute("role", "tabpanel"); panel.id = id;
      panel.setAttribute("aria-labelledby", tab.id); panel.dataset.gridSheet = ""; panel.dataset.formats = "[]";
      panel.hidden = true;
      var nameBox = document.createElement("div");
      nameBox.className = "grid-sheet-name";
      var label = document.createElement("label");
      label.htmlFor = id + "-name"; label.textContent = "Sheet name";
      var nameInput = document.createElement("input");
      nameInput.id = id + "-name"; nameInput.dataset.gridSheetName = ""; nameInput.value = "Sheet" + n; nameInput.maxLength = 31;
      nameInput.autocomplete = "off";
      nameBox.appendChild(label); nameBox.appendChild(nameInput);
      var host = document.createElement("div");
      host.className = "grid-host"; host.dataset.gridHost = "";
      var formats = document.createElement("div");
      formats.className = "grid-formats small"; formats.dataset.gridFormatsList = "";
      panel.appendChild(nameBox); panel.appendChild(host); panel.appendChild(formats);
      var last = sheets[sheets.length - 1].panel;
      last.parentNode.insertBefore(panel, last.nextSibling);
      var sheet = { panel: panel, rows: [], shown: [], numbers: [], errors: {}, table: null, width: 5 };
      for (var r = 0; r < 10; r++) { sheet.rows.push(["", "", "", "", ""]); sheet.shown.push(["", "", "", "", ""]); sheet.numbers.push([false, false, false, false, false]); }
      sheets.push(sheet);
      activate(sheet);
      changed();
    }

    function deleteSheet() {
      var sheet = active();
      if (sheets.length < 2) { say("A spreadsheet needs at least one sheet; add another before deleting this one.", true); return; }
      if (!window.confirm("Delete the sheet “" + sheetName(sheet) + "” and everything in it? You can still leave without saving.")) return;
      if (sheet.table) sheet.table.destroy();
      tabOf(sheet).remove(); sheet.panel.remove();
      sheets.splice(sheets.indexOf(sheet), 1);
      activate(sheets[0]);
      changed();
    }

    function addRows(sheet, count) {
      for (var i = 0; i < count; i++) {
        var blank = [], none = [];
        for (var c = 0; c < sheet.width; c++) { blank.push(""); none.push(false); }
        sheet.rows.push(blank); sheet.shown.push(blank.slice()); sheet.numbers.push(none);
        if (sheet.table) sheet.table.addRow(rowData(sheet, sheet.rows.length));
      }
    }
    function addColumns(sheet, count) {
      for (var i = 0; i < count; i++) {
        sheet.width += 1;
        sheet.rows.forEach(function (row, r) { row.push(""); sheet.shown[r].push(""); sheet.numbers[r].push(false); });
        if (sheet.table) sheet.table.addColumn(columnDef(sheet, sheet.width));
      }
    }

    // --- number formats ---------------------------------------------------------------------------
    function formatsOf(sheet) { try { return JSON.parse(sheet.panel.dataset.formats || "[]"); } catch (e) { return []; } }
    function renderFormats(sheet) {
      var box = sheet.panel.querySelector("[data-grid-formats-list]");
      if (!box) return;
      box.textContent = "";
      var list = formatsOf(sheet);
      if (!list.length) return;
      box.appendChild(document.createTextNode("Number formats on this sheet: "));
      list.forEach(function (fmt, i) {
        var chip = document.createElement("span");
        chip.className = "grid-format-chip";
        chip.textContent = fmt.range + " " + fmt.number_format + " ";
        if (!readonly) {
          var remove = document.createElement("button");
          remove.type = "button"; remove.className = "link"; remove.textContent = "remove";
          remove.setAttribute("aria-label", "Remove the format of " + fmt.range);
          remove.addEventListener("click", function () {
            var now = formatsOf(sheet); now.splice(i, 1);
            sheet.panel.dataset.formats = JSON.stringify(now); renderFormats(sheet); changed();
          });
          chip.appendChild(remove);
        }
        box.appendChild(chip);
      });
    }
    function applyFormat(numberFormat) {
      var sheet = active();
      var target = rangeText(sheet);
      var list = formatsOf(sheet).filter(function (f) { return f.range !== target; });
      var want = parseRange(target);
      var overlaps = list.some(function (f) {
        var other = parseRange(f.range);
        return other && want && other.r1 <= want.r2 && want.r1 <= other.r2 && other.c1 <= want.c2 && want.c1 <= other.c2;
      });
      if (numberFormat !== "General" || overlaps) list.push({ range: target, number_format: numberFormat });
      sheet.panel.dataset.formats = JSON.stringify(list);
      renderFormats(sheet);
      changed();
    }

    function clearRange(sheet) {
      var range = sheet.table.getRanges()[0];
      if (!range) return;
      var rows = sheet.table.getRows();
      for (var r = range.getTopEdge(); r <= range.getBottomEdge(); r++) {
        for (var c = Math.max(range.getLeftEdge(), 1); c <= range.getRightEdge(); c++) {
          var cell = rows[r] && rows[r].getCell("c" + c);
          if (cell && cell.getValue()) cell.setValue("");  // fires cellEdited: computed once for all
        }
      }
    }

    // --- pasting a block copied from a spreadsheet: the sheet grows to take it -----------------------
    function pasteBlock(sheet, a, text) {
      var lines = text.replace(/\r\n?/g, "\n").replace(/\n$/, "").split("\n").map(function (l) { return l.split("\t"); });
      var needRows = a.r + lines.length - 1, needCols = a.c + Math.max.apply(null, lines.map(function (l) { return l.length; })) - 1;
      if (needRows > sheet.rows.length) addRows(sheet, needRows - sheet.rows.length);
      if (needCols > sheet.width) addColumns(sheet, needCols - sheet.width);
      var updates = {};
      lines.forEach(function (cells, i) {
        var r = a.r + i;
        updates[r] = updates[r] || { _r: r };
        cells.forEach(function (value, j) {
          var raw = value.trim();
          sheet.rows[r - 1][a.c + j - 1] = raw;
          sheet.shown[r - 1][a.c + j - 1] = raw.charAt(0) === "=" ? "…" : raw;
          updates[r]["c" + (a.c + j)] = raw;
        });
      });
      sheet.table.updateData(Object.keys(updates).map(function (r) { return updates[r]; })).then(function () {
        repaint(sheet);
        setRange(sheet, a.r, a.c, false);
        setRange(sheet, needRows, a.c + Math.max.apply(null, lines.map(function (l) { return l.length; })) - 1, true);
        focusAnchor(sheet);
      });
      changed();
    }

    // --- events ----------------------------------------------------------------------------------------
    function sheetOfEvent(event) {
      return sheets.filter(function (s) { return s.table && s.panel.contains(event.target); })[0] || null;
    }
    root.addEventListener("input", function (event) {
      if (event.target === formula && !readonly) { state.changed = true; }
    });
    function commitFormula() {
      var sheet = active(), cell = anchorCell(sheet);
      if (!cell || readonly) return;
      var raw = formula.value.trim();
      if (raw !== (cell.getValue() || "")) cell.setValue(raw);  // fires cellEdited → computed
    }
    root.addEventListener("change", function (event) {
      var target = event.target;
      if (target === formula) {
        commitFormula();
      } else if (target.hasAttribute("data-grid-sheet-name")) {
        var sheet = sheets.filter(function (s) { return s.panel.contains(target); })[0];
        tabOf(sheet).textContent = target.value.trim() || "(no name)";
        changed();
      } else if (target === formatSelect && formatSelect.value) {
        applyFormat(formatSelect.value);
        formatSelect.value = "";
      }
    });
    root.addEventListener("keydown", function (event) {
      var target = event.target;
      if (target.hasAttribute && target.hasAttribute("data-grid-tab")) {
        var all = tabs(), i = all.indexOf(target);
        var next = event.key === "ArrowRight" ? all[(i + 1) % all.length] : event.key === "ArrowLeft" ? all[(i - 1 + all.length) % all.length] : null;
        if (next) { event.preventDefault(); next.focus(); next.click(); }
        return;
      }
      if (target === formula && event.key === "Enter") {
        event.preventDefault();  // Enter in the formula bar enters the value; it must not submit the document form
        commitFormula();
        focusAnchor(active());
        return;
      }
      if (target.hasAttribute && target.hasAttribute("data-grid-sheet-name") && event.key === "Enter") {
        event.preventDefault(); target.blur();
        return;
      }
      var sheet = sheetOfEvent(event);
      if (!sheet || !target.classList || !target.classList.contains("tabulator-cell")) return;
      var at = sheet.anchor || { r: 1, c: 1 };
      var ctrl = event.ctrlKey || event.metaKey;
      if (event.key === "Home") { event.preventDefault(); setRange(sheet, ctrl ? 1 : at.r, 1, false); focusAnchor(sheet); }
      else if (event.key === "End") { event.preventDefault(); setRange(sheet, ctrl ? sheet.rows.length : at.r, sheet.width, false); focusAnchor(sheet); }
      else if (readonly) return;
      else if (event.key === "Delete" || event.key === "Backspace") { event.preventDefault(); clearRange(sheet); }
      else if (event.key === "F2") { event.preventDefault(); var cell = cellOf(sheet, target); if (cell) cell.edit(); }
      else if (event.key === "Enter" && event.target.classList.contains("tabulator-row-header")) event.preventDefault();
      else if (event.key.length === 1 && !ctrl && !event.altKey) {
        // Typing on a cell replaces what it holds, as in a spreadsheet.
        var typedInto = cellOf(sheet, target);  // the focused cell: the range of a click is set a moment later
        if (!typedInto) return;
        event.preventDefault();
        state.typed = event.key;
        typedInto.edit();
      }
    });
    root.addEventListener("paste", function (event) {
      var sheet = sheetOfEvent(event);
      if (readonly || !sheet || editing()) return;
      var text = (event.clipboardData || window.clipboardData).getData("text/plain") || "";
      event.preventDefault();
      var cell = event.target.dataset && event.target.dataset.ref ? cellOf(sheet, event.target) : anchorCell(sheet);
      if (!cell) return;
      if (!/[\t\n]/.test(text.replace(/\r?\n$/, ""))) { cell.setValue(text.trim()); return; }
      pasteBlock(sheet, where(cell), text);
    });
    root.addEventListener("click", function (event) {
      var tab = event.target.closest("[data-grid-tab]");
      if (tab) {
        activate(sheets.filter(function (s) { return tabOf(s) === tab; })[0]);
        return;
      }
      var action = event.target.closest("[data-grid-action]");
      if (!action || readonly) return;
      var what = action.dataset.gridAction;
      if (what === "add-row") { addRows(active(), 1); changed(); }
      else if (what === "add-column") { addColumns(active(), 1); changed(); }
      else if (what === "add-sheet") addSheet();
      else if (what === "delete-sheet") deleteSheet();
    });

    sheets.forEach(renderFormats);
    loadTabulator(root).then(function () { build(active()); }, function (error) { say(error.message + " The table below still shows the values; reload the page to edit them.", true); });
  }

  function init(scope) {
    if (!scope || !scope.querySelectorAll) return;
    if (scope.matches && scope.matches("[data-grid]")) setup(scope);
    scope.querySelectorAll("[data-grid]").forEach(setup);
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.detail.elt); });
  if (document.readyState !== "loading") init(document);

  // Saving the document form waits for the grid's last change to be converted to content, and
  // refuses (in words) when the grid cannot be saved as it is: no edit is dropped silently.
  document.addEventListener("htmx:confirm", function (event) {
    var form = event.target;
    var root = form.tagName === "FORM" ? form.querySelector("[data-grid]:not([data-readonly])") : null;
    if (!root || !root._grid) return;
    var state = root._grid;
    event.preventDefault();
    if (document.activeElement && document.activeElement.classList.contains("grid-cell-editor")) document.activeElement.blur();
    state.settled().then(function () {
      if (state.invalid) {
        var box = root.querySelector("[data-grid-status]");
        box.textContent = "Not saved: " + state.invalid;
        box.classList.add("grid-status-error");
        box.scrollIntoView({ block: "center" });
        return;
      }
      event.detail.issueRequest(true);
    });
  });

  // Leaving the page with grid changes not yet saved asks first.
  window.addEventListener("beforeunload", function (event) {
    var root = document.querySelector("[data-grid]:not([data-readonly])");
    if (root && root._grid && root._grid.changed) { event.preventDefault(); event.returnValue = ""; }
  });
})();
