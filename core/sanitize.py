"""Everything a user or a model wrote goes through here before it becomes HTML.

Markdown is rendered with raw HTML disabled, then cleaned by nh3 (Ammonia) against an
allow-list: no script, no event handler, no javascript: URL, no hx-* attribute, and no
<img> at all so remote images are never loaded.
"""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s", "span",
    "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "u", "ul",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "td": {"align"}, "th": {"align"}}

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


def clean_html(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def markdown_to_safe_html(text: str) -> SafeString:
    """Markdown → HTML that templates may print as is: it has been through nh3."""
    return mark_safe(clean_html(_markdown.render(text or "")))  # noqa: S308 - cleaned above
