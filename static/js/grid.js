// The spreadsheet grid of an xlsx document (templates/authoring/_grid_editor.html).
//
// Each cell is an <input>: it keeps what the author typed in data-raw (a value, or a formula
// starting with "=") and, while not being edited, shows data-shown, the value the server
// computed with the same engine that writes the xlsx file's cached values. Every change posts
// the whole grid to the evaluate URL, which answers with the values, the problems and the
// document's content (the pipe-table text form) to put in the form's content field; saving is
// the document form's own save, held back until the last change has been converted.
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

  function setup(root) {
    if (root.dataset.gridReady) return;
    root.dataset.gridReady = "1";
    var readonly = root.hasAttribute("data-readonly");
    var state = { selected: null, anchor: null, rangeEnd: null, changed: root.hasAttribute("data-unsaved"),
                  stale: false, pending: null, seq: 0, invalid: "", editStart: "" };
    root._grid = state;
    var formula = root.querySelector("[data-grid-formula]");
    var address = root.querySelector("[data-grid-address]");
    var rangeLabel = root.querySelector("[data-grid-range]");
    var formatSelect = root.querySelector("[data-grid-format]");
    var statusBox = root.querySelector("[data-grid-status]");
    var errorsBox = root.querySelector("[data-grid-errors]");

    function panels() { return Array.prototype.slice.call(root.querySelectorAll("[data-grid-sheet]")); }
    function tabs() { return Array.prototype.slice.call(root.querySelectorAll("[data-grid-tab]")); }
    function activePanel() { return panels().filter(function (p) { return !p.hidden; })[0] || panels()[0]; }
    function body(panel) { return panel.querySelector("tbody"); }
    function width(panel) { return panel.querySelectorAll("thead th").length; }
    function cellAt(panel, r, c) {
      var row = body(panel).rows[r - 1];
      var td = row && row.cells[c];
      return td ? td.querySelector("input") : null;
    }
    function ref(input) { return colLetter(+input.dataset.col) + input.dataset.row; }

    function makeCell(panel, r, c) {
      var td = document.createElement("td");
      var input = document.createElement("input");
      input.className = "grid-cell";
      input.dataset.row = r; input.dataset.col = c; input.dataset.raw = ""; input.dataset.shown = "";
      input.autocomplete = "off"; input.spellcheck = false;
      input.setAttribute("aria-label", sheetName(panel) + " cell " + colLetter(c) + r);
      td.appendChild(input);
      return td;
    }
    function sheetName(panel) {
      var field = panel.querySelector("[data-grid-sheet-name]");
      var tab = document.getElementById(panel.getAttribute("aria-labelledby"));
      return (field ? field.value : tab.textContent).trim();
    }

    // --- selection and the formula bar -------------------------------------------------
    function rangeText() {
      if (!state.anchor) return "A1";
      var a = state.anchor, b = state.rangeEnd || a;
      var r1 = Math.min(a.r, b.r), r2 = Math.max(a.r, b.r), c1 = Math.min(a.c, b.c), c2 = Math.max(a.c, b.c);
      var first = colLetter(c1) + r1, last = colLetter(c2) + r2;
      return first === last ? first : first + ":" + last;
    }
    function paintRange() {
      root.querySelectorAll(".grid-in-range").forEach(function (el) { el.classList.remove("grid-in-range"); });
      var range = parseRange(rangeText());
      if (state.rangeEnd && range) {
        for (var r = range.r1; r <= range.r2; r++) for (var c = range.c1; c <= range.c2; c++) {
          var cell = cellAt(activePanel(), r, c);
          if (cell) cell.classList.add("grid-in-range");
        }
      }
      if (rangeLabel) rangeLabel.textContent = rangeText();
    }
    function select(input, extend) {
      var where = { r: +input.dataset.row, c: +input.dataset.col };
      if (extend && state.anchor) { state.rangeEnd = where; } else { state.anchor = where; state.rangeEnd = null; }
      state.selected = input;
      address.textContent = ref(input);
      formula.value = input.dataset.raw;
      paintRange();
    }

    function setRaw(input, raw) {
      input.dataset.raw = raw;
      // Until the server answers, a changed cell shows what was typed.
      input.dataset.shown = raw.charAt(0) === "=" ? "…" : raw;
      if (document.activeElement !== input) input.value = input.dataset.shown;
      state.changed = true;
      state.stale = true;
    }

    function move(input, dr, dc) {
      var next = cellAt(activePanel(), +input.dataset.row + dr, +input.dataset.col + dc);
      if (next) { next.focus(); next.select(); }
    }

    // --- serialising and computing -------------------------------------------------------
    function serialise() {
      return { sheets: panels().map(function (panel) {
        var rows = Array.prototype.map.call(body(panel).rows, function (tr) {
          return Array.prototype.map.call(tr.querySelectorAll("input.grid-cell"), function (input) { return input.dataset.raw; });
        });
        var formats = [];
        try { formats = JSON.parse(panel.dataset.formats || "[]"); } catch (e) { formats = []; }
        return { name: sheetName(panel), rows: rows, formats: formats };
      }) };
    }

    function say(text, isError) {
      statusBox.textContent = text;
      statusBox.classList.toggle("grid-status-error", !!isError);
    }

    function showErrors(errors) {
      errorsBox.textContent = "";
      root.querySelectorAll(".grid-error").forEach(function (el) {
        el.classList.remove("grid-error"); el.removeAttribute("aria-invalid"); el.removeAttribute("title");
      });
      errors.forEach(function (error) {
        var li = document.createElement("li");
        li.className = "message error";
        li.textContent = error.message + " ";
        if (error.cell !== null && error.sheet !== null && panels()[error.sheet]) {
          var panel = panels()[error.sheet];
          var range = parseRange(error.cell);
          var cell = range && cellAt(panel, range.r1, range.c1);
          if (cell) {
            cell.classList.add("grid-error"); cell.setAttribute("aria-invalid", "true"); cell.title = error.message;
            var go = document.createElement("button");
            go.type = "button"; go.className = "link"; go.textContent = "Go to " + sheetName(panel) + " " + error.cell;
            go.addEventListener("click", function () { activate(panel); cell.focus(); });
            li.appendChild(go);
          }
        }
        errorsBox.appendChild(li);
      });
    }

    function apply(data) {
      (data.sheets || []).forEach(function (sheet, n) {
        var panel = panels()[n];
        if (!panel) return;
        sheet.values.forEach(function (row, r) {
          row.forEach(function (shown, c) {
            var cell = cellAt(panel, r + 1, c + 1);
            if (!cell) return;
            cell.dataset.shown = shown;
            cell.classList.toggle("grid-number", !!sheet.numbers[r][c]);
            if (document.activeElement !== cell) cell.value = shown;
          });
        });
      });
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
    state.settled = function settled() {
      if (state.stale) evaluate();
      var pending = state.pending;
      return pending ? pending.then(settled) : Promise.resolve();
    };

    // --- sheets ----------------------------------------------------------------------------
    function activate(panel) {
      panels().forEach(function (p) {
        var tab = document.getElementById(p.getAttribute("aria-labelledby"));
        var on = p === panel;
        p.hidden = !on;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
      });
      state.anchor = null; state.rangeEnd = null;
      var first = cellAt(panel, 1, 1);
      if (first) select(first, false);
      renderFormats(panel);
    }

    function addSheet() {
      var names = panels().map(function (p) { return sheetName(p).toLowerCase(); });
      var n = panels().length + 1;
      while (names.indexOf(("Sheet" + n).toLowerCase()) >= 0) n++;
      var id = "grid-sheet-new-" + Date.now();
      var tab = document.createElement("button");
      tab.type = "button"; tab.setAttribute("role", "tab"); tab.id = id + "-tab"; tab.dataset.gridTab = "";
      tab.setAttribute("aria-controls", id); tab.textContent = "Sheet" + n;
      root.querySelector("[role=tablist]").appendChild(tab);
      var panel = document.createElement("div");
      panel.className = "grid-sheet"; panel.setAttribute("role", "tabpanel"); panel.id = id;
      panel.setAttribute("aria-labelledby", tab.id); panel.dataset.gridSheet = ""; panel.dataset.formats = "[]";
      var nameBox = document.createElement("div");
      nameBox.className = "grid-sheet-name";
      var label = document.createElement("label");
      label.htmlFor = id + "-name"; label.textContent = "Sheet name";
      var nameInput = document.createElement("input");
      nameInput.id = id + "-name"; nameInput.dataset.gridSheetName = ""; nameInput.value = "Sheet" + n; nameInput.maxLength = 31;
      nameBox.appendChild(label); nameBox.appendChild(nameInput);
      var scroll = document.createElement("div");
      scroll.className = "grid-scroll";
      var table = document.createElement("table");
      table.className = "grid-table";
      table.appendChild(document.createElement("thead")).appendChild(document.createElement("tr"))
        .appendChild(document.createElement("td")).className = "grid-corner";
      table.appendChild(document.createElement("tbody"));
      scroll.appendChild(table);
      var formats = document.createElement("div");
      formats.className = "grid-formats small"; formats.dataset.gridFormatsList = "";
      panel.appendChild(nameBox); panel.appendChild(scroll); panel.appendChild(formats);
      var lastPanel = panels()[panels().length - 1];
      lastPanel.parentNode.insertBefore(panel, lastPanel.nextSibling);
      for (var c = 0; c < 5; c++) addColumn(panel);
      for (var r = 0; r < 10; r++) addRow(panel);
      activate(panel);
      state.changed = true; evaluate();
    }

    function deleteSheet() {
      var panel = activePanel();
      if (panels().length < 2) { say("A spreadsheet needs at least one sheet; add another before deleting this one.", true); return; }
      if (!window.confirm("Delete the sheet “" + sheetName(panel) + "” and everything in it? You can still leave without saving.")) return;
      var tab = document.getElementById(panel.getAttribute("aria-labelledby"));
      tab.remove(); panel.remove();
      activate(panels()[0]);
      state.changed = true; evaluate();
    }

    function addRow(panel) {
      var tbody = body(panel);
      var r = tbody.rows.length + 1;
      var tr = tbody.insertRow();
      var th = document.createElement("th");
      th.scope = "row"; th.textContent = r;
      tr.appendChild(th);
      for (var c = 1; c <= width(panel); c++) tr.appendChild(makeCell(panel, r, c));
    }
    function addColumn(panel) {
      var c = width(panel) + 1;
      var th = document.createElement("th");
      th.scope = "col"; th.textContent = colLetter(c);
      panel.querySelector("thead tr").appendChild(th);
      Array.prototype.forEach.call(body(panel).rows, function (tr, i) { tr.appendChild(makeCell(panel, i + 1, c)); });
    }

    // --- number formats ------------------------------------------------------------------
    function formatsOf(panel) { try { return JSON.parse(panel.dataset.formats || "[]"); } catch (e) { return []; } }
    function renderFormats(panel) {
      var box = panel.querySelector("[data-grid-formats-list]");
      if (!box) return;
      box.textContent = "";
      var list = formatsOf(panel);
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
            var now = formatsOf(panel); now.splice(i, 1);
            panel.dataset.formats = JSON.stringify(now); renderFormats(panel); state.changed = true; evaluate();
          });
          chip.appendChild(remove);
        }
        box.appendChild(chip);
      });
    }
    function applyFormat(numberFormat) {
      var panel = activePanel();
      var target = rangeText();
      var list = formatsOf(panel).filter(function (f) { return f.range !== target; });
      var want = parseRange(target);
      var overlaps = list.some(function (f) {
        var other = parseRange(f.range);
        return other && want && other.r1 <= want.r2 && want.r1 <= other.r2 && other.c1 <= want.c2 && want.c1 <= other.c2;
      });
      if (numberFormat !== "General" || overlaps) list.push({ range: target, number_format: numberFormat });
      panel.dataset.formats = JSON.stringify(list);
      renderFormats(panel);
      state.changed = true;
      evaluate();
    }

    // --- pasting a block copied from a spreadsheet -------------------------------------------
    function pasteBlock(input, text) {
      var lines = text.replace(/\r\n?/g, "\n").replace(/\n$/, "").split("\n").map(function (l) { return l.split("\t"); });
      var panel = activePanel(), r0 = +input.dataset.row, c0 = +input.dataset.col;
      var needRows = r0 + lines.length - 1, needCols = c0 + Math.max.apply(null, lines.map(function (l) { return l.length; })) - 1;
      while (body(panel).rows.length < needRows) addRow(panel);
      while (width(panel) < needCols) addColumn(panel);
      lines.forEach(function (cells, i) {
        cells.forEach(function (value, j) { setRaw(cellAt(panel, r0 + i, c0 + j), value.trim()); });
      });
      input.value = input.dataset.raw;
      formula.value = input.dataset.raw;
      evaluate();
    }

    // A cell's new text is computed once: on Enter (which a form would otherwise take as
    // submit, so it fires no change) or when the cell is left, whichever comes first.
    function commit(input) {
      var raw = input.value.trim();
      if (raw === input._committed) return;
      input._committed = raw;
      setRaw(input, raw);
      evaluate();
    }

    // --- events ------------------------------------------------------------------------------
    root.addEventListener("focusin", function (event) {
      var input = event.target;
      if (!input.classList || !input.classList.contains("grid-cell")) return;
      select(input, false);
      state.editStart = input.dataset.raw;
      input._committed = input.dataset.raw;
      if (input.value !== input.dataset.raw) {
        // Tabbing in selects the whole cell, ready to be typed over: keep it so for the raw text.
        var whole = input.value.length > 0 && input.selectionStart === 0 && input.selectionEnd === input.value.length;
        input.value = input.dataset.raw;
        if (whole) input.select();
      }
    });
    root.addEventListener("focusout", function (event) {
      var input = event.target;
      if (!input.classList || !input.classList.contains("grid-cell")) return;
      input.value = input.dataset.shown;
    });
    root.addEventListener("mousedown", function (event) {
      var input = event.target;
      if (!event.shiftKey || !input.classList || !input.classList.contains("grid-cell") || !state.anchor) return;
      event.preventDefault();  // keep editing the first cell; the second only ends the range
      select(input, true);
      state.selected = cellAt(activePanel(), state.anchor.r, state.anchor.c);
      address.textContent = ref(state.selected);
      formula.value = state.selected.dataset.raw;
    });
    root.addEventListener("input", function (event) {
      var input = event.target;
      if (input.classList && input.classList.contains("grid-cell")) {
        input.dataset.raw = input.value;
        formula.value = input.value;
        state.changed = true; state.stale = true;
      } else if (input === formula && state.selected && !readonly) {
        setRaw(state.selected, formula.value);
      }
    });
    root.addEventListener("change", function (event) {
      var target = event.target;
      if (target.classList && target.classList.contains("grid-cell")) {
        commit(target);
      } else if (target === formula) {
        evaluate();
      } else if (target.hasAttribute("data-grid-sheet-name")) {
        var panel = target.closest("[data-grid-sheet]");
        document.getElementById(panel.getAttribute("aria-labelledby")).textContent = target.value.trim() || "(no name)";
        panel.querySelectorAll("input.grid-cell").forEach(function (cell) {
          cell.setAttribute("aria-label", target.value.trim() + " cell " + ref(cell));
        });
        state.changed = true; evaluate();
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
        if (state.selected) { evaluate(); state.selected.focus(); }
        return;
      }
      if (target.hasAttribute && target.hasAttribute("data-grid-sheet-name") && event.key === "Enter") {
        event.preventDefault(); target.blur();
        return;
      }
      if (!target.classList || !target.classList.contains("grid-cell")) return;
      var atStart = target.selectionStart === 0 && target.selectionEnd === 0;
      var atEnd = target.selectionStart === target.value.length;
      if (event.key === "Enter") { event.preventDefault(); commit(target); move(target, event.shiftKey ? -1 : 1, 0); }
      else if (event.key === "ArrowDown") { event.preventDefault(); move(target, 1, 0); }
      else if (event.key === "ArrowUp") { event.preventDefault(); move(target, -1, 0); }
      else if (event.key === "ArrowLeft" && atStart) { event.preventDefault(); move(target, 0, -1); }
      else if (event.key === "ArrowRight" && atEnd) { event.preventDefault(); move(target, 0, 1); }
      else if (event.key === "Escape" && target.value !== state.editStart) {
        event.preventDefault();
        target.value = state.editStart; target.dataset.raw = state.editStart; formula.value = state.editStart;
      }
    });
    root.addEventListener("paste", function (event) {
      var input = event.target;
      if (readonly || !input.classList || !input.classList.contains("grid-cell")) return;
      var text = (event.clipboardData || window.clipboardData).getData("text/plain") || "";
      if (!/[\t\n]/.test(text.replace(/\r?\n$/, ""))) return;
      event.preventDefault();
      pasteBlock(input, text);
    });
    root.addEventListener("click", function (event) {
      var tab = event.target.closest("[data-grid-tab]");
      if (tab) { activate(document.getElementById(tab.getAttribute("aria-controls"))); return; }
      var action = event.target.closest("[data-grid-action]");
      if (!action || readonly) return;
      var what = action.dataset.gridAction;
      if (what === "add-row") { addRow(activePanel()); state.changed = true; evaluate(); }
      else if (what === "add-column") { addColumn(activePanel()); state.changed = true; evaluate(); }
      else if (what === "add-sheet") addSheet();
      else if (what === "delete-sheet") deleteSheet();
    });

    panels().forEach(renderFormats);
    var first = cellAt(activePanel(), 1, 1);
    if (first) { state.anchor = { r: 1, c: 1 }; state.selected = first; }
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
