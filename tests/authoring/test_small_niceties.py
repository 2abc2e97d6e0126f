"""Issue 17, "Finding one's way": facts rows added without saving first, a penalty defaults
to the Pitfall tag, and "make a criterion from this step" starts from the step's substance."""

import re

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
