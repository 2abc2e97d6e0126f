from django import template
from django.utils.safestring import SafeString, mark_safe

from core.sanitize import markdown_to_safe_html

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    """Render user or model text as sanitized HTML (see core.sanitize)."""
    return mark_safe(markdown_to_safe_html(text))  # noqa: S308 - cleaned by nh3 above
