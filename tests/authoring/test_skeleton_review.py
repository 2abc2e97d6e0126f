"""Issue 17, "Wrong today" 3: a suggested skeleton is checked item by item (kind against
name, extension and format) and the expert edits, rejects, accepts or adds items before
anything goes into the data room."""

import pytest
from django.urls import reverse

from authoring import services
from authoring.models import SkeletonProposal
from authoring.services import drafting, skeletons
from core.exceptions import ApplicationError
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}

PROPOSED = [
    {"path": "Deal/SPA.docx", "kind": "chat", "format": "", "brief": "The share purchase agreement", "target_size": 900},
    {"path": "Deal/LOI.docx", "kind": "file", "format": "docx", "brief": "The LOI", "target_size": 600, "metadata": {}},
    {"path": "Mail/Kickoff", "kind": "email", "format": "", "brief": "Kick-off", "target_size": 150,
     "metadata": {"subject": "Kick-off"}},
    {"path": "Finance/Model.docx", "kind": "file", "format": "xlsx", "brief": "The model", "target_size": 300},
    {"path": "Calendar/Signing.eml", "kind": "event", "format": "", "brief": "Signing", "target_size": 50},
    {"path": "Deal/LOI.docx", "kind": "file", "format": "docx", "brief": "Twice", "target_size": 10},
]


@pytest.fixture
def room(team):
    return services.world_create(
        project_id=team.project.pk, user=team.author, title="Acme acquires Beta", outline="Acme Corp buys Beta Ltd.",
        facts=[{"key": "Purchase price", "value": "$12,000,000"}],
    )


@pytest.fixture
def proposal(team, room, endpoint, fake_llm, eager, django_capture_on_commit_callbacks) -> SkeletonProposal:
    fake_llm.script(Reply(structured={"items": PROPOSED}))
    with django_capture_on_commit_callbacks(execute=True):
        made = skeletons.skeleton_suggest(world=room, user=team.author, endpoint=endpoint)
    made.refresh_from_db()
    assert made.status == "ready"
    return made


def problems(proposal: SkeletonProposal) -> list[str]:
    proposal.refresh_from_db()
    return [item["problem"] for item in proposal.items]


def test_each_proposed_item_is_checked_against_its_name_in_plain_words(proposal):
    found = problems(proposal)
    assert found[0] == "A .docx is a file, not a chat message: choose File or rename it."
    assert found[1] == "" and found[2] == ""
    assert found[3] == "The name ends in .docx but the format is Excel (xlsx): change one so that they match."
    assert found[4] == "A .eml is an email, not a calendar event: choose Email or rename it."
    assert found[5] == "A document with this path already exists: rename it or reject this item."


def test_an_invalid_item_is_never_accepted_not_alone_nor_with_all(team, room, proposal):
    with pytest.raises(ApplicationError, match=r"A \.docx is a file, not a chat message"):
        skeletons.skeleton_accept(proposal=proposal, user=team.author, indexes=[0])
    created = skeletons.skeleton_accept(proposal=proposal, user=team.author)
    assert [d.path for d in created] == ["Deal/LOI.docx", "Mail/Kickoff"]
    assert sorted(room.documents.values_list("path", "kind", "format")) == [
        ("Deal/LOI.docx", "file", "docx"), ("Mail/Kickoff", "email", ""),
    ]
    assert not room.documents.filter(kind="chat").exists()
    # The old import path still works (the drafting module re-exports the moved functions).
    assert drafting.skeleton_accept is skeletons.skeleton_accept


def test_the_author_fixes_rejects_and_adds_items_then_accepts_them(team, room, proposal):
    skeletons.skeleton_item_update(
        proposal=proposal, user=team.author, index=0, path="Deal/SPA.docx", kind="file", format="", brief="The SPA, signed version",
        target_size=1200,
    )
    proposal.refresh_from_db()
    assert proposal.items[0]["problem"] == "" and proposal.items[0]["format"] == "docx"  # read from the name
    assert (proposal.items[0]["brief"], proposal.items[0]["target_size"]) == ("The SPA, signed version", 1200)
    skeletons.skeleton_item_reject(proposal=proposal, user=team.author, index=1)
    assert problems(proposal)[5] == ""  # the rejected LOI no longer takes the path: the second one may go in
    skeletons.skeleton_item_add(
        proposal=proposal, user=team.author, path="Chat/deal-team/Kick-off", kind="chat", brief="Dana opens the channel",
        target_size=40,
    )
    with pytest.raises(ApplicationError, match="you rejected it"):
        skeletons.skeleton_accept(proposal=proposal, user=team.author, indexes=[1])
    created = skeletons.skeleton_accept(proposal=proposal, user=team.author)
    assert sorted(d.path for d in created) == ["Chat/deal-team/Kick-off", "Deal/LOI.docx", "Deal/SPA.docx", "Mail/Kickoff"]
    assert room.documents.get(path="Deal/LOI.docx").brief == "Twice"
    assert room.documents.get(path="Chat/deal-team/Kick-off").kind == "chat"
    proposal.refresh_from_db()
    assert proposal.items[-1]["source"] == "author" and proposal.items[-1]["accepted"]
    with pytest.raises(ApplicationError, match="already in the data room"):
        skeletons.skeleton_item_update(
            proposal=proposal, user=team.author, index=0, path="X.md", kind="file", format="", brief="", target_size=1
        )


def test_a_path_taken_in_the_data_room_since_the_proposal_is_caught_at_accept(team, room, proposal):
    services.document_create(world=room, user=team.author, path="Mail/Kickoff", kind="email")
    with pytest.raises(ApplicationError, match="already exists"):
        skeletons.skeleton_accept(proposal=proposal, user=team.author, indexes=[2])


def test_reviewers_cannot_change_a_proposal(team, proposal):
    with pytest.raises(ApplicationError):
        skeletons.skeleton_item_reject(proposal=proposal, user=team.reviewer, index=0)
    with pytest.raises(ApplicationError):
        skeletons.skeleton_item_add(proposal=proposal, user=team.reviewer, path="A.md", kind="file")
    assert len(problems(proposal)) == len(PROPOSED)


# --- Through the pages ----------------------------------------------------------------------

def test_the_panel_shows_problems_and_lets_the_author_edit_reject_and_add(client, team, room, proposal):
    client.force_login(team.author)
    page = client.get(reverse("world-editor", args=[room.pk])).content.decode()
    assert "A .docx is a file, not a chat message: choose File or rename it." in page
    assert 'aria-label="Accept Deal/SPA.docx"' not in page and 'aria-label="Accept Deal/LOI.docx"' in page
    assert 'aria-label="Edit Deal/SPA.docx"' in page and 'aria-label="Reject Deal/SPA.docx"' in page

    editor = client.get(reverse("skeleton-item", args=[proposal.pk, 0]) + "?edit=1", **HX).content.decode()
    assert 'id="skeleton-item-0"' in editor and 'value="Deal/SPA.docx"' in editor and "Save item" in editor
    assert '<option value="chat" selected>' in editor

    saved = client.post(
        reverse("skeleton-item", args=[proposal.pk, 0]),
        {"path": "Deal/SPA.docx", "kind": "file", "format": "", "brief": "The SPA", "target_size": "900"}, **HX,
    )
    body = saved.content.decode()
    assert saved.status_code == 200 and 'id="skeleton-proposal"' in body
    assert "not a chat message" not in body and 'aria-label="Accept Deal/SPA.docx"' in body

    rejected = client.post(reverse("skeleton-item-reject", args=[proposal.pk, 3]), **HX).content.decode()
    assert "Rejected" in rejected and 'aria-label="Bring back Finance/Model.docx"' in rejected
    back = client.post(reverse("skeleton-item-reject", args=[proposal.pk, 3]), {"restore": "1"}, **HX).content.decode()
    assert "The name ends in .docx but the format is Excel (xlsx)" in back

    refused = client.post(
        reverse("skeleton-item-add", args=[proposal.pk]),
        {"path": "", "kind": "file", "format": "", "brief": "Kept brief", "target_size": "300"}, **HX,
    )
    assert refused.status_code == 422 and "Not saved." in refused.content.decode() and "Kept brief" in refused.content.decode()
    added = client.post(
        reverse("skeleton-item-add", args=[proposal.pk]),
        {"path": "Deal/Board minutes.docx", "kind": "file", "format": "", "brief": "Board approves", "target_size": "400"}, **HX,
    ).content.decode()
    assert "Deal/Board minutes.docx" in added and "(yours)" in added

    accepted = client.post(reverse("skeleton-accept", args=[proposal.pk]), {"index": "all"}, **HX)
    assert accepted["HX-Trigger"] == "data-room-changed"
    assert sorted(room.documents.values_list("path", flat=True)) == [
        "Deal/Board minutes.docx", "Deal/LOI.docx", "Deal/SPA.docx", "Mail/Kickoff",
    ]
    assert room.documents.get(path="Deal/SPA.docx").kind == "file"


def test_a_plain_form_post_redirects_and_an_outsider_gets_404(client, team, other_team, room, proposal):
    client.force_login(team.author)
    response = client.post(
        reverse("skeleton-item-add", args=[proposal.pk]),
        {"path": "Notes.md", "kind": "file", "format": "", "brief": "", "target_size": "30"},
    )
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[room.pk])
    assert problems(proposal)[-1] == ""
    row = {"path": "Hijack.md", "kind": "file", "format": "", "brief": "", "target_size": "30"}
    count = len(problems(proposal))
    for user, status in ((other_team.author, 404), (team.reviewer, 403)):
        client.force_login(user)
        assert client.post(reverse("skeleton-item-reject", args=[proposal.pk, 0]), **HX).status_code == status
        assert client.post(reverse("skeleton-item", args=[proposal.pk, 0]), row, **HX).status_code == status
        assert client.post(reverse("skeleton-item-add", args=[proposal.pk]), row, **HX).status_code == status
    client.force_login(other_team.author)
    assert client.get(reverse("skeleton-item", args=[proposal.pk, 0]) + "?edit=1", **HX).status_code == 404
    proposal.refresh_from_db()
    assert not proposal.items[0]["rejected"] and proposal.items[0]["path"] == "Deal/SPA.docx" and len(proposal.items) == count
