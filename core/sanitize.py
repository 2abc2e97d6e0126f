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
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "td": {"align"}, "th": {"align"}, "ol": {"start"}, "li": {"value"}}

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


def _numbers_as_written(state) -> None:
    """Each item of a numbered list keeps the number its author wrote ("4. Conditions", then
    "6. Payment" shows 4 and 6, not 4 and 5): the item's value attribute."""
    ordered = []
    for token in state.tokens:
        if token.type in ("ordered_list_open", "bullet_list_open"):
            ordered.append(token.type == "ordered_list_open")
        elif token.type in ("ordered_list_close", "bullet_list_close"):
            ordered.pop()
        elif token.type == "list_item_open" and ordered and ordered[-1] and token.info.isdigit():
            token.attrSet("value", token.info)


# A document (a contract, a memo, an email body) is shown as its author laid it out: every
# line break in the source is a line break, and numbered items keep their own numbers.
_document_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable("table").enable("strikethrough")
_document_markdown.core.ruler.push("numbers_as_written", _numbers_as_written)


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


def document_markdown_to_safe_html(text: str) -> SafeString:
    """A document's markdown → safe HTML laid out as its docx and pdf are (line breaks and
    list numbers as written: authoring.rendering)."""
    return mark_safe(clean_html(_document_markdown.render(text or "")))  # noqa: S308 - cleaned above
