// Small helps in the authoring forms (issue 17).
// - "Add a fact" (world editor): a new empty row of the facts sheet, in place; nothing is
//   saved until "Save scenario". Any button with data-add-row="<tbody selector>" and
//   data-row-template="<template selector>" does the same.
// - A criterion with negative points is a pitfall: in any form with a `points` field and a
//   `tag` select, negative points turn the tag to Pitfall unless the author chose a tag
//   themselves (the server does the same for a penalty left with the default tag).
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-add-row]");
    if (!button) return;
    var body = document.querySelector(button.getAttribute("data-add-row"));
    var template = document.querySelector(button.getAttribute("data-row-template"));
    if (!body || !template) return;
    body.appendChild(template.content.cloneNode(true));
    var added = body.lastElementChild;
    var first = added && added.querySelector("input, textarea, select");
    if (first) first.focus();
  });

  function fieldsOf(points) {
    var scope = points.closest("tr.editing, form");
    if (!scope) return null;
    var suffix = points.name.slice(0, -"points".length);  // "" or a form prefix such as "criterion-3-"
    return scope.querySelector("select[name='" + suffix + "tag']");
  }

  // Only the author's own choice of tag counts as chosen ("change" fires for people, not scripts).
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field.tagName === "SELECT" && /(^|-)tag$/.test(field.name)) field.setAttribute("data-chosen", "");
  });

  document.addEventListener("input", function (event) {
    var points = event.target;
    if (points.tagName !== "INPUT" || !/(^|-)points$/.test(points.name)) return;
    var tag = fieldsOf(points);
    if (!tag || tag.hasAttribute("data-chosen")) return;
    var value = parseInt(points.value, 10);
    if (value < 0 && tag.value !== "pitfall") {
      tag.setAttribute("data-was", tag.value);
      tag.value = "pitfall";
    } else if (!(value < 0) && tag.hasAttribute("data-was")) {
      tag.value = tag.getAttribute("data-was");  // back to what it was before the points went negative
      tag.removeAttribute("data-was");
    }
  });
})();
