"""Issue 17, "Finding one's way": facts rows added without saving first, a penalty defaults
to the Pitfall tag, and "make a criterion from this step" starts from the step's substance."""

import re
from uuid import uuid4

import pytest
from django.urls import reverse

from authoring import services
from authoring.models import Criterion
from rollouts.models import Step, StepKind
from rollouts.views.step_prefill import criterion_prefill, key_sentence
from tests.rollouts.test_pages import author_client, finished_batch, task  # noqa: F401  (fixtures)

HX = {"HTTP_HX_REQUEST": "true"}


# --- Facts sheet rows --------------------------------------------------------------------------

def test_the_facts_sheet_has_an_add_a_fact_button_and_a_row_template(client, team, world):
    services.world_update(world=world, user=team.author, title=world.title, outline=world.outline,
                          facts=[{"key": "Purchase price", "value": "$12,000,000"}], base_revision=world.revision)
    client.force_login(team.author)
    page = client.get(reverse("world-editor", args=[world.pk])).content.decode()
    assert 'id="add-fact"' in page and 'data-add-row="#facts-rows"' in page
    template = re.search(r'<template id="fact-row-template">(.*?)</template>', page, re.S).group(1)
    assert 'name="fact_key"' in template and 'name="fact_value"' in template
    assert page.count('name="fact_key"') == 3  # the saved fact, one empty row, the template's row
    assert '<script src="/static/js/authoring_forms.js"' in page and '<script src="/static/js/unsaved.js"' in page


def test_rows_added_in_the_browser_are_saved_with_the_scenario_and_empty_ones_dropped(client, team, world):
    client.force_login(team.author)
    world.refresh_from_db()
    response = client.post(reverse("world-editor", args=[world.pk]), {
        "title": world.title, "outline": world.outline, "revision": world.revision,
        "fact_key": ["Purchase price", "", "Closing date"], "fact_value": ["$12,000,000", "", "2026-03-31"],
    }, **HX)
    assert response.status_code == 200 and "Saved." in response.content.decode()
    world.refresh_from_db()
    assert world.facts == [{"key": "Purchase price", "value": "$12,000,000"}, {"key": "Closing date", "value": "2026-03-31"}]


# --- Pitfall by default -------------------------------------------------------------------------

def test_a_penalty_left_with_the_default_tag_becomes_a_pitfall(team, env_task):
    rubric = env_task.rubric_versions.order_by("-number").first()
    penalty = services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Invents a price", points=-4)
    assert penalty.tag == "pitfall"
    rubric.refresh_from_db()
    chosen = services.criterion_add(
        env_task=env_task, user=team.author, base_revision=rubric.revision, text="Skips the cap table", points=-2, tag="essential"
    )
    assert chosen.tag == "essential"  # a tag the author chose is kept
    rubric.refresh_from_db()
    positive = env_task.rubric_versions.order_by("-number").first().criteria.get(text="States fact 1")
    updated = services.criterion_update(
        criterion=positive, user=team.author, base_revision=rubric.revision, text="States fact 1", points=-1, tag="important"
    )
    assert updated.tag == "pitfall"


def test_the_criterion_forms_add_a_penalty_as_a_pitfall(client, team, env_task):
    client.force_login(team.author)
    rubric = env_task.rubric_versions.order_by("-number").first()
    response = client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "Says the MSA ends by itself", "points": "-6", "tag": "important", "explanation": "", "revision": rubric.revision,
    }, **HX)
    body = response.content.decode()
    assert response.status_code == 200 and "Says the MSA ends by itself" in body
    row = re.search(r'<tr id="criterion-\d+">(?:(?!</tr>).)*Says the MSA ends by itself.*?</tr>', body, re.S).group(0)
    assert '<span class="badge pitfall">Pitfall</span>' in row
    assert Criterion.objects.get(text="Says the MSA ends by itself").tag == "pitfall"


def test_a_refused_criterion_keeps_what_was_typed(client, team, env_task):
    client.force_login(team.author)
    rubric = env_task.rubric_versions.order_by("-number").first()
    refused = client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "Names the buyer", "points": "0", "tag": "important", "explanation": "Kept explanation", "revision": rubric.revision,
    }, **HX)
    body = refused.content.decode()
    assert refused.status_code == 422 and "not zero" in body
    assert ">Names the buyer</textarea>" in body and ">Kept explanation</textarea>" in body

    criterion = rubric.criteria.first()
    open_edit = client.post(reverse("criterion-row", args=[criterion.pk]), {
        "text": "A better wording", "points": "500", "tag": "essential", "explanation": "", "revision": rubric.revision,
    }, **HX)
    body = open_edit.content.decode()
    assert open_edit.status_code == 422 and f'<tr id="criterion-{criterion.pk}" class="editing">' in body
    assert ">A better wording</textarea>" in body and 'value="500"' in body
    criterion.refresh_from_db()
    assert criterion.text == "States fact 1"


# --- A criterion from a step --------------------------------------------------------------------

@pytest.mark.parametrize(("step", "expected"), [
    (Step(kind=StepKind.TOOL, tool_name="read_file", arguments={"path": "Deal/SPA.docx"}, text="…the whole SPA…"),
     "Reads Deal/SPA.docx before answering"),
    (Step(kind=StepKind.TOOL, tool_name="search_files", arguments={"query": "change of control"}),
     "Searches the files for “change of control”"),
    (Step(kind=StepKind.TOOL, tool_name="send_email", arguments={"to": ["cfo@beta.test"], "subject": "Price", "body": "Hi"}),
     "Sends an email to cfo@beta.test about “Price”"),
    (Step(kind=StepKind.MODEL, text="Let me check the files.", tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/LOI.docx"}}]),
     "Reads Deal/LOI.docx before answering"),
    (Step(kind=StepKind.MODEL, text="Sure. Here is my answer:\n\nThe purchase price is **$12,000,000**, payable at closing. Let me know."),
     'States that "The purchase price is $12,000,000 , payable at closing."'),
    (Step(kind=StepKind.TOOL, tool_name="read_file", arguments={"path": "Nope.md"}, is_error=True),
     'Does not make the failing call read_file(path="Nope.md")'),
])
def test_the_prefill_is_the_steps_substance(step, expected):
    assert criterion_prefill(step) == expected


def test_the_key_sentence_prefers_the_one_stating_a_fact():
    assert key_sentence("I have reviewed the documents. The escrow is 10% of the price. Thanks!") == "The escrow is 10% of the price."
    assert key_sentence("Nothing suspicious here") == "Nothing suspicious here"


def test_the_step_criterion_page_is_prefilled_from_a_tool_call(author_client, finished_batch):  # noqa: F811
    read = finished_batch.rollouts.get(index=0).steps.get(index=3)
    assert (read.kind, read.tool_name) == (StepKind.TOOL, "read_file")
    page = author_client.get(reverse("step-criterion", args=[read.pk])).content.decode()
    assert ">\nReads Deal/Doc 1.md before answering</textarea>" in page
    assert "Uses what" not in page
    answer = finished_batch.rollouts.get(index=0).steps.get(index=4)
    page = author_client.get(reverse("step-criterion", args=[answer.pk])).content.decode()
    assert ">\nStates that &quot;The purchase price is $12m (Deal/Doc 1.md).&quot;</textarea>" in page


def test_a_document_that_cannot_be_built_says_so_when_saved_and_after(client, team, world):
    """Saving an email whose date has no offset, or a reply whose thread is not the path of
    the thread's first email, says why it cannot be built (it used to say a green "Saved."
    and leave the author to find out at submit or export); a buildable one says "Saved."."""
    first = services.document_create(world=world, user=team.author, path="Mail/01 Kickoff", kind="email", content="Let us start.",
                                     metadata={"from": "Ann <ann@acme.test>", "to": "Bo <bo@beta.test>", "subject": "Kickoff",
                                               "date": "2025-03-15"})
    reply = services.document_create(world=world, user=team.author, path="Mail/02 Re", kind="email", content="Agreed.",
                                     metadata={"from": "Bo <bo@beta.test>", "to": "Ann <ann@acme.test>", "subject": "Re: Kickoff",
                                               "date": "2025-03-16T10:00:00+00:00", "thread": "kickoff"})
    client.force_login(team.author)
    page = client.get(reverse("document-editor", args=[first.pk])).content.decode()
    warning = re.search(r'<div class="message warning" role="status" id="document-build-problem">(.*?)</div>', page, re.S).group(1)
    assert "cannot be built into its file yet" in warning and "e.g. 2025-03-15T00:00:00+00:00" in warning
    assert "Body (plain text, sent as written)" in page and "Content (markdown)" not in page  # mail is sent as plain text
    services.document_update(document=first, user=team.author, base_revision=first.revision, path=first.path, kind="email", format="",
                             brief="", target_size=300, content=first.content, locked=False,
                             metadata={**first.metadata, "date": "2025-03-15T09:00:00+00:00"})
    page = client.get(reverse("document-editor", args=[first.pk])).content.decode()
    assert 'id="document-build-problem"' not in page
    page = client.get(reverse("document-editor", args=[reply.pk])).content.decode()
    assert 'id="document-build-problem"' in page and "thread" in re.search(r'id="document-build-problem">(.*?)</div>', page, re.S).group(1)


def test_a_version_that_differs_only_in_its_details_can_be_restored(client, team, world):
    """Restoring brings back the text and the details; a version whose text is the current one
    but whose date differs offered no button, and the current version says it is current."""
    doc = services.document_create(world=world, user=team.author, path="Mail/Offer", kind="email", content="Offer attached.",
                                   metadata={"from": "Ann <ann@acme.test>", "to": "Bo <bo@beta.test>", "subject": "Offer",
                                             "date": "2025-03-15T09:00:00+00:00"})
    doc = services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="Offer attached.")
    doc = services.document_update(document=doc, user=team.author, base_revision=doc.revision,
                                   metadata={**doc.metadata, "date": "2025-03-16T09:00:00+00:00"})
    client.force_login(team.author)
    first, last = doc.versions.order_by("number").first(), doc.versions.order_by("number").last()
    assert first.content == last.content and first.metadata != last.metadata
    older = client.get(reverse("document-versions", args=[doc.pk]) + f"?v={first.number}").content.decode()
    assert 'id="restore-version"' in older and "its details (such as the sender or the date) differ" in older
    current = client.get(reverse("document-versions", args=[doc.pk]) + f"?v={last.number}").content.decode()
    assert 'id="restore-version"' not in current and 'id="version-is-current"' in current


def test_the_live_preview_reads_the_details_being_typed(client, team, world):
    doc = services.document_create(world=world, user=team.author, path="Mail/Offer", kind="email", content="Offer attached.")
    client.force_login(team.author)
    preview = client.post(reverse("document-preview", args=[doc.pk]), {
        "content": "Offer attached.", "meta_from": "Ann Lee <ann@acme.test>", "meta_to": "Bo <bo@beta.test>",
        "meta_subject": "Offer for Beta", "meta_date": "2025-03-15T09:00:00+00:00"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Offer for Beta" in preview and "Ann Lee" in preview and "missing" not in preview


def test_the_consistency_check_says_why_a_fact_was_not_checked(client, team, world):
    type(world).objects.filter(pk=world.pk).update(facts=[{"key": "Escrow", "value": "5%"}, {"key": "Code name", "value": "Falcon"}])
    client.force_login(team.author)
    fragment = client.get(reverse("world-consistency", args=[world.pk]), HTTP_HX_REQUEST="true").content.decode()
    line = re.search(r'id="consistency-unchecked">(.*?)</p>', fragment, re.S).group(1)
    assert "<strong>Escrow</strong>\n      (its name asks for an amount, and its value holds none)" in line
    assert ("<strong>Code name</strong>\n      (not a kind of fact the check reads: amounts, dates, percentages, periods, "
            "the governing law, and the parties of a deal by their roles (buyer, sellers, target))") in line


def test_the_consistency_check_never_says_all_clear_when_it_compared_nothing(client, team, world):
    """A lease world whose documents state a rent of USD 69,000 against the sheet's 96,000 in
    words the check does not read: it said "No contradictions found" in green, and a lawyer
    read the world as clean. It now says nothing was compared."""
    type(world).objects.filter(pk=world.pk).update(facts=[{"key": "Annual rent", "value": "USD 96,000"}])
    services.document_create(world=world, user=team.author, path="Notice.md", content="The rent under the lease is USD 69,000 a year.")
    client.force_login(team.author)
    fragment = client.get(reverse("world-consistency", args=[world.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "No contradictions found" not in fragment
    warning = re.search(r'id="consistency-nothing-compared">(.*?)</div>', fragment, re.S).group(1)
    assert warning.startswith("Nothing was compared: none of these facts was found stated in the documents")


def test_the_details_say_what_they_take_and_events_show_all_day_and_repeats(client, team, world):
    """The date, start, end and thread fields had no hint of their format; an event's all-day
    flag and recurrence (kept from an .ics import) could not be seen or changed."""
    event = services.document_create(world=world, user=team.author, path="Calendar/Closing", kind="event", content="Signing.",
                                     metadata={"subject": "Closing", "start": "2025-06-30T00:00:00+00:00",
                                               "end": "2025-07-01T00:00:00+00:00", "all_day": True, "rrule": "FREQ=YEARLY;COUNT=2"})
    client.force_login(team.author)
    page = client.get(reverse("document-editor", args=[event.pk])).content.decode()
    assert '<label for="meta-all_day">All day</label><input id="meta-all_day" name="meta_all_day" value="True"' in page
    assert 'name="meta_rrule" value="FREQ=YEARLY;COUNT=2" placeholder="FREQ=WEEKLY;COUNT=10"' in page
    assert 'name="meta_start" value="2025-06-30T00:00:00+00:00" placeholder="2026-03-06T15:00:00+00:00"' in page
    mail = services.document_create(world=world, user=team.author, path="Mail/01 Kickoff", kind="email", content="Hello.")
    page = client.get(reverse("document-editor", args=[mail.pk])).content.decode()
    assert 'placeholder="the path of the thread&#x27;s first message, e.g. Mail/01 Kickoff"' in page


def test_the_world_wide_build_check_is_kept_until_an_item_of_its_kind_changes(client, team, world, monkeypatch):
    """An email's page puts the world's whole mailbox together to find a broken thread; that
    took seconds on a world of 1,000 emails at every load. It is kept under a digest of the
    world's emails: loading the page again renders nothing, editing any email renders again."""
    import authoring.rendering

    # (the cache outlives a test: content of its own, so no earlier run's verdict is found)
    first = services.document_create(world=world, user=team.author, path="Mail/01 Kickoff", kind="email", content=f"Start. {uuid4()}",
                                     metadata={"from": "Ann <ann@acme.test>", "to": "Bo <bo@beta.test>", "subject": "Kickoff",
                                               "date": "2025-03-15T09:00:00+00:00"})
    reply = services.document_create(world=world, user=team.author, path="Mail/02 Re", kind="email", content="Agreed.",
                                     metadata={"from": "Bo <bo@beta.test>", "to": "Ann <ann@acme.test>", "subject": "Re: Kickoff",
                                               "date": "2025-03-16T10:00:00+00:00", "thread": "Mail/01 Kickoff",
                                               "message_id": "<re@beta.test>"})
    calls = []
    real = authoring.rendering.render_mbox
    monkeypatch.setattr(authoring.rendering, "render_mbox", lambda items, **kw: calls.append(len(items)) or real(items, **kw))
    client.force_login(team.author)
    for _ in range(3):
        assert 'id="document-build-problem"' not in client.get(reverse("document-editor", args=[reply.pk])).content.decode()
    assert calls == [2]
    services.document_update(document=first, user=team.author, base_revision=first.revision, path=first.path, kind="email", format="",
                             brief="", target_size=300, content=first.content, locked=False,
                             metadata={**first.metadata, "message_id": "<re@beta.test>"})
    pages = [client.get(reverse("document-editor", args=[d.pk])).content.decode() for d in (first, reply)]
    assert calls == [2, 2] and any("a Message-ID names one email" in page for page in pages)
