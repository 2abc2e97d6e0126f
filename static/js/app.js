// Taskwright's only script of its own: swap the fragment a refused permission answers,
// and show a plain message when a request fails in a way no fragment explains (any other
// 403, a 404 or a 500 answered to an htmx request).

// A refusal is a 403 marked with this header (core/views.py), its body the form or
// fragment that says why: swap it as base.html's config swaps a 422.
document.addEventListener("htmx:beforeSwap", function (event) {
  var xhr = event.detail.xhr;
  if (xhr.status === 403 && xhr.getResponseHeader("Taskwright-Refusal")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
document.addEventListener("htmx:responseError", function (event) {
  var box = document.getElementById("request-error");
  if (!box) return;
  var status = event.detail.xhr.status;
  box.textContent = status === 404
    ? "That item no longer exists, or you do not have access to it. Reload the page."
    : status === 403
      ? "Your session has expired or you may not do this. Reload the page and sign in again."
      : "Something went wrong on the server (" + status + "). Nothing was saved; try again.";
  box.hidden = false;
});
document.addEventListener("htmx:sendError", function () {
  var box = document.getElementById("request-error");
  if (box) { box.textContent = "The server could not be reached. Nothing was saved; try again."; box.hidden = false; }
});

// A <details data-load="url"> loads its content into its [data-load-target] the first time it
// is opened (a model step's request and response: too large to send with every trajectory).
// Without this script, the link inside opens the same content as a page of its own.
document.addEventListener("toggle", function (event) {
  var details = event.target;
  if (!details.open || !details.dataset || !details.dataset.load || details.dataset.loaded) return;
  details.dataset.loaded = "1";
  var target = details.querySelector("[data-load-target]") || details;
  htmx.ajax("GET", details.dataset.load, { target: target, swap: "innerHTML" });
}, true);  // (toggle does not bubble: listened for on its way down)

// Keyboard focus across an htmx swap. When the swap replaces the element that had focus
// (an Edit button swapped for the editing row, a Save button for the saved row), the browser
// drops focus to <body> and a keyboard user starts again from the top of the page. htmx keeps
// focus itself when the new content has an element with the focused one's id; otherwise focus
// moves into what was swapped in: the field of the same name, else an [autofocus] field,
// else an error message, else the first control, else the swapped-in region itself. Swaps the
// user was not in (polling, other fragments) never move focus.
(function () {
  var FOCUSABLE = "[autofocus], a[href], button:not([disabled]), input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";
  var pending = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var active = document.activeElement;
    var target = event.detail.target;
    pending = null;
    if (!active || active === document.body || !target || !(target === active || target.contains(active))) return;
    // A shortcut item (a verdict, a ranked trajectory) is given its focus back by shortcuts.js;
    // moving it to the region's first control here would make that control's item the current one.
    if (active.closest("[data-kbd-item]")) return;
    pending = { targetId: target.id, parent: target.parentElement, name: active.getAttribute("name") };
  });
  document.addEventListener("htmx:afterSettle", function () {
    var info = pending;
    pending = null;
    if (!info) return;
    var active = document.activeElement;
    if (active && active !== document.body && document.contains(active)) return;  // focus survived
    var region = (info.targetId && document.getElementById(info.targetId)) || info.parent;
    if (!region || !document.contains(region)) return;
    var same = info.name && [].filter.call(region.querySelectorAll("[name]"), function (e) { return e.getAttribute("name") === info.name && e.type !== "hidden"; })[0];
    var next = same || region.querySelector("[autofocus]")
      || region.querySelector("[role=alert], .message.error")
      || region.querySelector(FOCUSABLE);
    if (next && next.matches("[role=alert], .message.error, [role=status]") && !next.hasAttribute("tabindex")) next.setAttribute("tabindex", "-1");
    if (!next) {
      next = region;
      if (!next.hasAttribute("tabindex")) next.setAttribute("tabindex", "-1");
    }
    next.focus({ preventScroll: false });
  });
})();

// A read-only value to copy (the API token): focusing it selects it whole.
document.addEventListener("focusin", function (event) {
  if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
});
