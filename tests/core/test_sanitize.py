from html.parser import HTMLParser

import pytest

from core.sanitize import markdown_to_safe_html


class ActiveContent(HTMLParser):
    """Collects what a browser would act on: elements and attributes, not escaped text."""

    def __init__(self):
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in {"script", "img", "iframe", "svg", "object", "embed", "style", "form", "input"}:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith(("on", "hx-", "data-hx")) or name in {"src", "style"}:
                self.problems.append(f"{tag}[{name}]")
            if name == "href" and (value or "").strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                self.problems.append(f"{tag}[href={value}]")


def active_content(html: str) -> list[str]:
    parser = ActiveContent()
    parser.feed(html)
    return parser.problems

ATTACKS = [
    "<script>alert(1)</script>",
    '<img src="https://evil.test/x.png" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '<a href="#" hx-get="/admin/" hx-trigger="load">x</a>',
    '<div onmouseover="alert(1)">hover</div>',
    "![tracker](https://evil.test/pixel.png)",
    '<svg><script>alert(1)</script></svg>',
    '<iframe src="https://evil.test"></iframe>',
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_executable_or_remote_survives(attack):
    assert active_content(markdown_to_safe_html(attack)) == []


def test_the_checker_sees_raw_attacks():
    # Guards the test above against passing vacuously.
    assert active_content('<img src="x" onerror="alert(1)"><a href="javascript:x" hx-get="/">y</a><script></script>') == [
        "<img>", "img[src]", "img[onerror]", "a[href=javascript:x]", "a[hx-get]", "<script>",
    ]


def test_markdown_still_renders():
    html = markdown_to_safe_html("# Title\n\n**bold** and [a link](https://example.com)\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert 'href="https://example.com"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert "<table>" in html


def test_user_text_on_a_page_is_sanitized(client, team, world):
    from authoring import services

    services.world_update(
        world=world,
        user=team.author,
        title=world.title,
        outline='<script>alert("x")</script> **ok**',
        facts=[],
        base_revision=world.revision,
    )
    client.force_login(team.reviewer)
    page = client.get(f"/worlds/{world.pk}/").content.decode()
    assert '<script>alert("x")</script>' not in page and "<strong>ok</strong>" in page
    assert "&lt;script&gt;" in page  # shown as text, not run
