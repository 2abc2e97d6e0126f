// No edit is dropped without a word (issue 17).
// 1. Leaving a page (link, reload, closing the tab) with unsaved changes in the task editor,
//    the document editor or the world editor asks first (the browser's own "Leave site?").
// 2. "Save task" also sends the criterion editors left open with changes: the server saves
//    both or neither (authoring/views/open_edits.py), so a criterion edit is never lost.
// 3. A button whose answer would replace fields with unsaved changes it does not send
//    (saving one criterion while another is being edited) asks before going on.
// A field is "unsaved" when someone changed it and its value differs from the one the page
// was served with (defaultValue / defaultChecked / defaultSelected), so a successful htmx save, which
// swaps in the saved form, leaves nothing to warn about. A form re-rendered with an error
// still holds unsaved text: it is marked data-unsaved until a later save replaces it.
(function () {
  "use strict";

  var GUARDED = "#task-form, #rubric, #document-form, #world-form, #data-room, #skeleton-proposal";
  var USER_EVENTS = { click: true, submit: true, keyup: true, keydown: true, change: true };
  var leaving = false;

  function selectDirty(select) {
    var options = Array.prototype.slice.call(select.options);
    if (!options.length) return false;
    var served = options.some(function (o) { return o.defaultSelected; });
    // A single select served with no option marked selected starts on its first option.
    if (!select.multiple && !served) return select.selectedIndex !== 0;
    return options.some(function (o) { return o.selected !== o.defaultSelected; });
  }

  // Only fields someone changed count: a script that fills or tidies a field on load (a grid
  // editor writing its textarea) must not make the page ask before every exit.
  function touch(event) {
    if (event.target && event.target.matches && event.target.matches("input, textarea, select")) event.target.__touched = true;
  }
  document.addEventListener("input", touch, true);
  document.addEventListener("change", touch, true);

  function isDirty(field) {
    if (!field.__touched || field.disabled || field.hasAttribute("data-unsaved-ignore")) return false;
    var type = (field.type || "").toLowerCase();
    if (type === "hidden" || type === "submit" || type === "button" || type === "reset") return false;
    if (type === "file") return !!(field.files && field.files.length);
    if (type === "checkbox" || type === "radio") return field.checked !== field.defaultChecked;
    if (field.tagName === "SELECT") return selectDirty(field);
    return field.value !== field.defaultValue;
  }

  function dirtyFields(root) {
    return Array.prototype.filter.call(root.querySelectorAll("input, textarea, select"), isDirty);
  }

  function unsavedRoots() {
    return Array.prototype.filter.call(document.querySelectorAll(GUARDED), function (root) {
      return root.hasAttribute("data-unsaved") || root.querySelector("[data-unsaved]") || dirtyFields(root).length > 0;
    });
  }

  // What a person would call the part of the page a field sits in.
  function describe(field) {
    var row = field.closest("tr.editing");
    if (row && row.id.indexOf("criterion-") === 0) return "an open criterion editor";
    if (row) return "an open row editor";
    var form = field.closest("form");
    var heading = form && form.querySelector("h2, h3, h4");
    var section = field.closest("section");
    heading = heading || (section && section.querySelector("h2"));
    return heading ? "“" + heading.textContent.trim() + "”" : "this page";
  }

  // 1. Leaving the page.
  window.addEventListener("beforeunload", function (event) {
    if (leaving || unsavedRoots().length === 0) return;
    event.preventDefault();
    event.returnValue = "";  // older browsers need it set to show their prompt
  });
  // A plain (non-htmx) form being sent is the save itself: no warning for it.
  document.addEventListener("submit", function (event) {
    if (!event.defaultPrevented) leaving = true;
  });
  window.addEventListener("pageshow", function () { leaving = false; });

  // 2. "Save task" takes the open criterion editors with it.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.closest || !elt.closest("#task-form")) return;
    document.querySelectorAll("#criteria tr.editing[id^='criterion-']").forEach(function (row) {
      if (dirtyFields(row).length === 0) return;
      var id = row.id.slice("criterion-".length);
      var prefix = "criterion-" + id + "-";
      event.detail.formData.append("open_criteria", id);
      row.querySelectorAll("input[name], textarea[name], select[name]").forEach(function (field) {
        var type = (field.type || "").toLowerCase();
        if ((type === "checkbox" || type === "radio") && !field.checked) return;
        if (field.tagName === "SELECT" && field.multiple) {
          Array.prototype.forEach.call(field.selectedOptions, function (o) { event.detail.formData.append(prefix + field.name, o.value); });
          return;
        }
        event.detail.formData.append(prefix + field.name, field.value);
      });
    });
  });

  // 3. Ask before a user's request replaces unsaved fields it does not send.
  document.addEventListener("htmx:confirm", function (event) {
    var detail = event.detail;
    var trigger = detail.triggeringEvent;
    if (!detail.target || !trigger || !USER_EVENTS[trigger.type]) return;
    var sent = detail.elt.closest("tr.editing, form") || detail.elt;
    var fromTaskForm = !!detail.elt.closest("#task-form");
    var atRisk = dirtyFields(detail.target).filter(function (field) {
      if (sent.contains(field)) return false;
      return !(fromTaskForm && field.closest("#criteria tr.editing"));  // sent along (2.)
    });
    if (atRisk.length === 0) return;
    var where = Array.from(new Set(atRisk.map(describe))).join(", ");
    event.preventDefault();
    if (window.confirm("You have unsaved changes in " + where + ". They will be lost if you go on. Go on anyway?")) {
      detail.issueRequest(false);  // false: the request's own hx-confirm ("Delete this criterion?") still asks
    }
  });

  // A form re-rendered with an error still holds what the user typed, unsaved.
  var lastStatus = {};
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id) lastStatus[target.id] = event.detail.xhr ? event.detail.xhr.status : 200;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    if (!target || !target.id || !(target.id in lastStatus)) return;
    var status = lastStatus[target.id];
    delete lastStatus[target.id];
    var swapped = document.getElementById(target.id);
    if (!swapped || !swapped.matches(GUARDED)) return;
    var holdsTyping = /^(task|world|document)-form$/.test(swapped.id) || swapped.querySelector("tr.editing");
    if (status >= 400 && holdsTyping) swapped.setAttribute("data-unsaved", "");
    else swapped.removeAttribute("data-unsaved");
  });
})();
