"""The replica UI's fixtures: the workspace tests' world holding every format (files, a
mail thread, chat threads, events), an overlay on it, a world of another project, and a
small HTML reader so tests check what a person sees (which items are marked, in what
order) rather than raw markup."""

from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from tests.workspace.conftest import data_room, other_world, overlay  # noqa: F401 - fixtures shared with tests/workspace
from workspace.tools import Workspace, execute

HX = {"HTTP_HX_REQUEST": "true"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
APPS = ("drive", "mail", "chat", "calendar")
# Tags that start a new line when read: their text is kept apart from what precedes it.
BLOCKS = {"article", "br", "dd", "div", "dt", "h1", "h2", "h3", "h4", "header", "li", "p", "section", "td", "th", "tr"}


def hx(target: str) -> dict:
    """The headers htmx sends when a link or form targets the element with id `target`."""
    return {**HX, "HTTP_HX_TARGET": target}


def app_url(app: str, scope: str, pk: int, query: str = "") -> str:
    return reverse(f"replica-{app}", args=[scope, pk]) + query


def write(world, into, name: str, arguments: dict) -> str:
    """A tool call as the agent makes it, into the overlay `into`."""
    result = execute(workspace=Workspace(world, into), name=name, arguments=arguments)
    assert not result.is_error, result.text
    return result.text


@dataclass
class Element:
    tag: str
    attrs: dict
    raw_text: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join("".join(self.raw_text).split())

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class Page(HTMLParser):
    """Every element of a response with its attributes and its text (entities decoded)."""

    def __init__(self, response) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self._open: list[Element] = []
        self._all: list[str] = []
        self.feed(response.content.decode())

    def handle_starttag(self, tag, attrs) -> None:
        if tag in BLOCKS:
            self.handle_data(" ")
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        if tag not in VOID:
            self._open.append(element)

    def handle_startendtag(self, tag, attrs) -> None:
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag) -> None:
        for n in range(len(self._open) - 1, -1, -1):
            if self._open[n].tag == tag:
                del self._open[n:]
                return

    def handle_data(self, data) -> None:
        self._all.append(data)
        for element in self._open:
            element.raw_text.append(data)

    def find(self, cls: str | None = None, *, tag: str | None = None, id: str | None = None) -> list[Element]:
        return [e for e in self.elements if (cls is None or cls in e.classes) and (tag is None or e.tag == tag)
                and (id is None or e.attrs.get("id") == id)]

    def texts(self, cls: str, *, tag: str | None = None) -> list[str]:
        return [e.text for e in self.find(cls, tag=tag)]

    @property
    def text(self) -> str:
        """Everything the response says, as one line."""
        return " ".join("".join(self._all).split())


def marked(page: Page, change: str) -> list[str]:
    """The texts of the items highlighted as added / modified / deleted (badges excluded)."""
    return [e.text for e in page.elements if f"replica-{change}" in e.classes and "replica-badge" not in e.classes]


def fragment(response, element_id: str) -> Page:
    """An htmx answer: exactly the element it replaces, never a whole page."""
    assert response.status_code == 200
    body = response.content.decode().lstrip()
    assert "<html" not in body and body.startswith("<") and f'id="{element_id}"' in body.split(">", 1)[0], body[:300]
    return Page(response)


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client
