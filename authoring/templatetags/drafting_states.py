"""The data room's drafting state per document, read once per page render."""

from django import template

from authoring import selectors
from authoring.models import Document, DraftJob

register = template.Library()


@register.simple_tag(takes_context=True)
def last_draft_job(context: template.Context, document: Document) -> DraftJob | None:
    """The document's last draft job when it failed, was cancelled or is still open (else
    None). The whole room's states are read with one query and kept for the rest of this
    render, so a page of rows costs one query, not one per row."""
    states = context.render_context.get("draft_states")
    if states is None or states[0] != document.world_id:
        states = (document.world_id, selectors.document_draft_states(world_id=document.world_id))
        context.render_context["draft_states"] = states
    return states[1].get(document.pk)
