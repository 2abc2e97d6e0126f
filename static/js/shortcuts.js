// Keyboard shortcuts for the work an expert does hundreds of times: marking verdicts, ranking
// trajectories, reading a trajectory step by step, answering a review checklist. `?` opens
// the list of the current page's shortcuts (templates/_shortcuts.html).
//
// Pages opt in with data attributes, never with script of their own:
//   data-kbd-item="verdict|rank|step|check"  an item j/k (or the arrows) move between (a verdict
//     is also a `tr.q-verdict` of the batch quality page, whose row markup its tests pin);
//   data-kbd-action="met|not_met|clear|up|down|pass|fail"  the control a key presses in the current item;
//   data-kbd-focus="approve|request-changes|decision"  what a key moves focus to (it never submits:
//     the reviewer presses Enter on the focused button, so one stray key decides nothing).
// No shortcut fires while the user types (input, textarea, select, contenteditable) or holds
// Ctrl, Alt or Meta. The current item survives an htmx swap: it is found again by its id.
(function () {
  "use strict";

  var KINDS = ["verdict", "step", "check", "rank"];  // j/k move in the first kind on the page until an item is chosen
  var ITEMS = {
    verdict: '[data-kbd-item="verdict"], tr.q-verdict[id]',
    step: '[data-kbd-item="step"]',
    check: '[data-kbd-item="check"]',
    rank: '[data-kbd-item="rank"]',
  };
  var SETTLING = (window.htmx && htmx.config.settlingClass) || "htmx-settling";
  var ANY_ITEM = KINDS.map(function (kind) { return ITEMS[kind]; }).join(", ");
  var NAMES = { verdict: "verdict", rank: "trajectory in your ranking", step: "step", check: "checklist item" };
  var currentId = null;

  function typing(el) {
    if (!el || el === document.body) return false;
    if (el.isContentEditable) return true;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
  }

  function items(kind) {
    return Array.prototype.slice.call(document.querySelectorAll(ITEMS[kind]));
  }

  function kindOf(el) {
    for (var i = 0; i < KINDS.length; i++) if (el.matches(ITEMS[KINDS[i]])) return KINDS[i];
    return null;
  }

  function current() {
    var el = currentId && document.getElementById(currentId);
    return el && kindOf(el) ? el : null;
  }

  function kindOnPage() {
    var el = current();
    if (el) return kindOf(el);
    for (var i = 0; i < KINDS.length; i++) if (items(KINDS[i]).length) return KINDS[i];
    return null;
  }

  function say(text) {
    var box = document.getElementById("kbd-status");
    if (box) box.textContent = text;
  }

  function choose(el) {
    var old = current();
    if (old) old.classList.remove("kbd-current");
    if (!el) { currentId = null; return; }
    if (!el.id) return;  // an item without an id could not be found again after a swap
    currentId = el.id;
    // A verdict hidden in a closed "Verdicts per criterion" disclosure is shown first.
    var details = el.parentElement && el.parentElement.closest("details");
    if (details && !details.open) details.open = true;
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    el.classList.add("kbd-current");
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
  }

  function move(kind, step) {
    var list = items(kind);
    if (!list.length) return false;
    var at = list.indexOf(current());
    var next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(Math.max(at + step, 0), list.length - 1);
    choose(list[next]);
    if (at >= 0 && next === at) say(step > 0 ? "This is the last " + NAMES[kind] + "." : "This is the first " + NAMES[kind] + ".");
    return true;
  }

  function press(action, advance) {
    var el = current();
    if (!el) {
      say("Choose an item first: press j to go to the first one.");
      return true;
    }
    // Content htmx has just swapped in is wired up (its hx-post and the like) when it settles,
    // 20 ms later, more on a busy machine: a click before that would post the form as a
    // plain page and reload it. The key waits for the settling instead.
    if (el.closest("." + SETTLING)) {
      var again = function () {
        document.removeEventListener("htmx:afterSettle", again);
        press(action, advance);
      };
      document.addEventListener("htmx:afterSettle", again);
      return true;
    }
    var control = el.querySelector('[data-kbd-action="' + action + '"]');
    if (!control || control.disabled) {
      say(kindOf(el) === "rank" ? "It cannot move further that way." : "You cannot change this here.");
      return true;
    }
    control.click();
    if (advance) move(kindOf(el), 1);
    return true;
  }

  function focusTarget(name, message) {
    var el = document.querySelector('[data-kbd-focus="' + name + '"]');
    if (!el) return false;
    if (el.tagName === "FORM") el = el.querySelector("textarea") || el;  // (the form's comment box)
    el.focus();
    el.scrollIntoView({ block: "center" });
    say(message);
    return true;
  }

  function dialog() { return document.getElementById("kbd-dialog"); }

  function openHelp() {
    var box = dialog();
    if (!box || box.open) return;
    box.querySelectorAll("[data-kbd-group]").forEach(function (group) {
      var kind = group.getAttribute("data-kbd-group");
      group.hidden = kind !== "page" && !items(kind).length && !document.querySelector('[data-kbd-focus="' + kind + '"]');
    });
    var none = box.querySelector("[data-kbd-none]");
    if (none) none.hidden = !!box.querySelector("[data-kbd-group]:not([hidden]):not([data-kbd-group=page])");
    box.showModal();
  }

  function handle(event) {
    var key = event.key;
    var kind = kindOnPage();
    if (key === "?") { openHelp(); return true; }
    if (!kind) return false;
    var arrows = event.target === current() || event.target === document.body;  // elsewhere the arrows keep their own work
    if (event.shiftKey && (key === "K" || (key === "ArrowUp" && arrows)) && kind === "rank") return press("up", false);
    if (event.shiftKey && (key === "J" || (key === "ArrowDown" && arrows)) && kind === "rank") return press("down", false);
    if (key === "j" || (key === "ArrowDown" && arrows && current())) return move(kind, 1);
    if (key === "k" || (key === "ArrowUp" && arrows && current())) return move(kind, -1);
    if (key === "v" && items("verdict").length) { choose(items("verdict")[0]); return true; }
    if (key === "r" && items("rank").length) { choose(items("rank")[0]); return true; }
    if (kind === "verdict") {
      if (key === "m") return press("met", true);
      if (key === "n") return press("not_met", true);
      if (key === "c") return press("clear", false);
    }
    if (kind === "check") {
      if (key === "p") return press("pass", true);
      if (key === "f") return press("fail", true);
    }
    if (key === "a") return focusTarget("approve", "Approve is selected: press Enter to approve, or Tab to go on.");
    if (key === "x") return focusTarget("request-changes", "Request changes is selected: press Enter to send it, or Tab to go on.");
    if (key === "d") return focusTarget("decision", "In the comment for the author.");
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
    if (typing(event.target)) return;
    var box = dialog();
    if (box && box.open) return;  // the dialog handles its own keys (Escape closes it)
    if (handle(event)) event.preventDefault();
  });

  // Tabbing or clicking into an item makes it the current one, so j/k go on from there.
  document.addEventListener("focusin", function (event) {
    var item = event.target.closest && event.target.closest(ANY_ITEM);
    if (!item || !item.id || item.id === currentId) return;
    var old = current();
    if (old) old.classList.remove("kbd-current");
    currentId = item.id;
    item.classList.add("kbd-current");
  });

  // An htmx swap replaces the current item (a marked verdict, a moved trajectory): mark the
  // new element and give it back the focus the removed one had.
  // (htmx settles a swapped element with the old one's attributes first, then its own: the
  // mark is put back after that, and the focus too unless the user has moved it elsewhere.)
  // The item that had the focus when a swap began (its id): it gets the focus back whatever
  // the browser did with it meanwhile (Chrome may hand it to the first control of the new row,
  // the position field of a ranked trajectory included, where the next j/k would be typed).
  // Not when the user has gone on meanwhile: a key or click between the swap and its settling
  // (htmx settles 20 ms later; more on a busy machine) that made another item the current one,
  // or put the focus outside the item, keeps it where the user put it.
  var focusedItemId = null;
  document.addEventListener("htmx:beforeSwap", function () {
    var el = current();
    if (el && document.activeElement === el) focusedItemId = el.id;
  });
  document.addEventListener("htmx:afterSettle", function () {
    var el = current();
    var hadFocus = !!el && el.id === focusedItemId;
    focusedItemId = null;
    if (!el) return;
    el.classList.add("kbd-current");
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    var active = document.activeElement;
    var nowhere = !active || active === document.body || !document.contains(active);
    // (Taken back from a control of the item, unless the user is typing in a field of it.)
    if (nowhere || (el.contains(active) && (hadFocus || !typing(active)))) el.focus({ preventScroll: true });
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-kbd-open]")) openHelp();
    var close = event.target.closest && event.target.closest("[data-kbd-close]");
    if (close && dialog()) dialog().close();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var hint = document.getElementById("kbd-hint");
    if (hint && kindOnPage()) hint.hidden = false;
  });
})();
