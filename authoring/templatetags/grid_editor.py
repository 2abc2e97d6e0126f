"""{% grid_state content as grid %}: the spreadsheet grid of a document's content
(templates/authoring/_grid_editor.html), computed when the editor page renders so the
first paint already shows every value."""

from django import template

from authoring.views.grid import grid_context

register = template.Library()


@register.simple_tag
def grid_state(content: str | None, saved_content: str) -> dict:
    return grid_context(content or "", saved_content)
