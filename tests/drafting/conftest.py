import json
import re

import pytest

from authoring import services
from tests.fake_llm import Reply


# What the fake model drafts, by document path: structured output in the shape the
# rendering package's content_schema asks for.
def _block(type_, text="", level=0, items=(), header=(), rows=()):
    return {"type": type_, "level": level, "text": text, "items": list(items), "header": list(header), "rows": [list(r) for r in rows]}


DRAFTS = {
    "Deal/LOI.docx": {"blocks": [
        _block("heading", "Letter of intent", level=1),
        _block("paragraph", "Acme Corp proposes to acquire Beta Ltd for a purchase price of $12,000,000."),
        _block("bullets", items=["Exclusivity: 60 days", "Closing: 2026-03-31"]),
        _block("table", header=["Item", "Amount"], rows=[["Price", "$12,000,000"], ["Escrow", "$1,200,000"]]),
    ]},
    "Finance/Cap table.xlsx": {"sheets": [{"name": "Cap table", "rows": [
        ["Holder", "Shares"], ["Founders", "6000000"], ["Investors", "4000000"], ["Total", "=SUM(B2:B3)"],
    ], "formats": [{"range": "B2:B4", "number_format": "#,##0"}]}]},
    "Mail/Kickoff": {
        "from": {"name": "Dana Ruiz", "email": "dana@acme.test"}, "to": [{"name": "Sam Lee", "email": "sam@beta.test"}],
        "cc": [], "bcc": [], "date": "2026-01-05T09:00:00+00:00", "subject": "Project Beta kick-off", "attachments": [],
        "body": "Sam,\n\nThe purchase price we discussed is $12,000,000.\n\nDana",
    },
    "Mail/Re Kickoff": {
        "from": {"name": "Sam Lee", "email": "sam@beta.test"}, "to": [{"name": "Dana Ruiz", "email": "dana@acme.test"}],
        "cc": [], "bcc": [], "date": "2026-01-05T11:00:00+00:00", "subject": "Re: Project Beta kick-off", "attachments": [],
        "body": "Dana,\n\nAgreed on $12,000,000.\n\nSam",
    },
}


def path_of(request) -> str:
    for message in request.body.get("messages", []):
        match = re.search(r"^Path: (.+)$", str(message.get("content", "")), re.M)
        if match:
            return match.group(1).strip()
    return ""


@pytest.fixture
def drafting_world(team):
    world = services.world_create(
        project_id=team.project.pk, user=team.author, title="Acme acquires Beta",
        outline="Acme Corp buys Beta Ltd.", facts=[{"key": "Purchase price", "value": "$12,000,000"}],
    )
    return world


def scripted_responder(drafts: dict | None = None, *, fallback=None):
    """A fake-server responder answering each draft request with DRAFTS[path]."""
    drafts = drafts or DRAFTS

    def respond(request):
        path = path_of(request)
        if path in drafts:
            return Reply(structured=drafts[path], input_tokens=1200, output_tokens=400)
        if fallback is not None:
            return fallback(request)
        return Reply(status=500, content=f"no script for {path!r}: {json.dumps(request.body)[:100]}")

    return respond
