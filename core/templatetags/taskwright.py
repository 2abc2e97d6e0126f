from django import template
from django.utils.safestring import SafeString

from core.sanitize import markdown_to_safe_html

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    """Render user or model text as sanitized HTML (see core.sanitize)."""
    return markdown_to_safe_html(text)
