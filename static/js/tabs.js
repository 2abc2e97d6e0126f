// Tabs (the WAI-ARIA tabs pattern) for any [role=tablist] whose tabs are links to
// ?tab=<key> with aria-controls naming their [role=tabpanel]. Without this file each tab
// is a plain link that reloads the page with that tab selected; with it, a click or the
// arrow keys (Home / End too) switch panels in place, the address keeps ?tab=<key> so a
// reload or a shared link opens the same tab, and elements marked data-tab-load inside a
// panel receive the htmx event "tab-shown" (their hx-trigger loads the panel the first time).
(function () {
  "use strict";

  function tabsOf(list) {
    return Array.prototype.slice.call(list.querySelectorAll("[role=tab]"));
  }

  function panelOf(tab) {
    return document.getElementById(tab.getAttribute("aria-controls"));
  }

  function select(tab, options) {
    var list = tab.closest("[role=tablist]");
    tabsOf(list).forEach(function (other) {
      var on = other === tab;
      other.setAttribute("aria-selected", on ? "true" : "false");
      other.tabIndex = on ? 0 : -1;
      var panel = panelOf(other);
      if (panel) panel.hidden = !on;
    });
    var panel = panelOf(tab);
    if (panel && window.htmx) {
      panel.querySelectorAll("[data-tab-load]").forEach(function (el) { window.htmx.trigger(el, "tab-shown"); });
    }
    if (options.focus) tab.focus();
    if (options.remember && tab.dataset.tab) {
      var url = new URL(window.location.href);
      url.searchParams.set("tab", tab.dataset.tab);
      url.hash = "";
      window.history.replaceState(window.history.state, "", url.toString());
    }
  }

  document.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest("[role=tablist] [role=tab]");
    if (!tab || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    select(tab, { focus: false, remember: true });
  });

  document.addEventListener("keydown", function (event) {
    var tab = event.target.closest && event.target.closest("[role=tablist] [role=tab]");
    if (!tab) return;
    var tabs = tabsOf(tab.closest("[role=tablist]"));
    var i = tabs.indexOf(tab);
    var next = null;
    if (event.key === "ArrowRight" || event.key === "ArrowDown") next = tabs[(i + 1) % tabs.length];
    else if (event.key === "ArrowLeft" || event.key === "ArrowUp") next = tabs[(i - 1 + tabs.length) % tabs.length];
    else if (event.key === "Home") next = tabs[0];
    else if (event.key === "End") next = tabs[tabs.length - 1];
    else if (event.key === " ") next = tab;  // a link ignores Space; a tab is activated by it
    if (!next) return;
    event.preventDefault();
    select(next, { focus: true, remember: true });
  });

  // A link to something inside a hidden panel (…/tasks/5/#task-trials, #criterion-12) opens its tab.
  // A target the panel loads later (#q-probes) is found by the id prefixes the panel lists in
  // data-tab-anchors; it is scrolled to once htmx has loaded it.
  function openHashTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) return;
    var target = document.getElementById(id);
    var panel = target ? target.closest("[role=tabpanel]") : null;
    if (!target) {
      document.querySelectorAll("[role=tabpanel][data-tab-anchors]").forEach(function (candidate) {
        if (candidate.dataset.tabAnchors.split(" ").some(function (prefix) { return prefix && id.indexOf(prefix) === 0; })) panel = candidate;
      });
    }
    if (!panel || !panel.hidden) return;
    var tab = document.querySelector("[role=tab][aria-controls='" + panel.id + "']");
    if (!tab) return;
    select(tab, { focus: false, remember: false });
    if (target) {
      target.scrollIntoView();
      return;
    }
    var arrived = function () {
      var loaded = document.getElementById(id);
      if (!loaded) return;
      document.body.removeEventListener("htmx:afterSettle", arrived);
      loaded.scrollIntoView();
    };
    document.body.addEventListener("htmx:afterSettle", arrived);
  }

  // The user menu (templates/base.html) is a <details>: Escape or a click elsewhere closes it.
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.user-menu[open]").forEach(function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll("details.user-menu[open]").forEach(function (menu) {
      menu.open = false;
      menu.querySelector("summary").focus();
    });
  });

  // After htmx has processed the page (its DOMContentLoaded handler was registered first), so
  // the panel's data-tab-load elements are listening for "tab-shown".
  if (document.readyState === "complete") openHashTarget();
  else document.addEventListener("DOMContentLoaded", openHashTarget);
  window.addEventListener("hashchange", openHashTarget);
})();
