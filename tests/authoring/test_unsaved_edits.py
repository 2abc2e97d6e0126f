"""Issue 17, "Wrong today" 4: saving the task while a criterion editor is open saves both,
or nothing with a message that says what is unsaved. (The browser side, which sends the
open editors with the task form and guards leaving the page: tests/browser/test_unsaved.py.)"""

import pytest
from django.urls import reverse

from tests import factories

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def author(client, team):
    client.force_login(team.author)
    return client


def task_form(env_task, **changes) -> dict:
    env_task.refresh_from_db()
    return {
        "title": env_task.title, "prompt": env_task.prompt, "deliverable_kind": env_task.deliverable_kind,
        "reference_answer": env_task.reference_answer, "revision": env_task.revision, **changes,
    }


def open_editor(criterion, rubric, **changes) -> dict:
    """What static/js/unsaved.js adds for an open criterion editor with changes."""
    fields = {"text": criterion.text, "points": criterion.points, "tag": criterion.tag, "explanation": criterion.explanation,
              "revision": rubric.revision, **changes}
    return {f"criterion-{criterion.pk}-{name}": value for name, value in fields.items()}


def current_rubric(env_task):
    return env_task.rubric_versions.order_by("-number").first()


def test_saving_the_task_saves_the_open_criterion_edit_too(author, env_task):
    rubric = current_rubric(env_task)
    first = rubric.criteria.get(text="States fact 1")
    data = {**task_form(env_task, prompt="State the price and the escrow."), "open_criteria": [str(first.pk)],
            **open_editor(first, rubric, text="States the price: $12m")}
    response = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    body = response.content.decode()
    assert response.status_code == 200 and "Saved: the task and 1 open criterion edit." in body
    assert "rubric-settings-changed" in response["HX-Trigger"] and "criteria-changed" in response["HX-Trigger"]
    env_task.refresh_from_db()
    assert env_task.prompt == "State the price and the escrow."
    assert list(current_rubric(env_task).criteria.values_list("text", flat=True)) == ["States the price: $12m", "States fact 2"]
    # The rubric the page reloads then shows the saved criterion.
    rubric_part = author.get(reverse("task-editor", args=[env_task.pk]) + "?part=rubric", **HX).content.decode()
    assert "States the price: $12m" in rubric_part


def test_several_open_editors_are_all_saved(author, env_task):
    rubric = current_rubric(env_task)
    first, second = rubric.criteria.order_by("position")
    data = {**task_form(env_task), "open_criteria": [str(first.pk), str(second.pk)],
            **open_editor(first, rubric, text="One"), **open_editor(second, rubric, text="Two", points=-3)}
    response = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    assert "2 open criterion edits" in response.content.decode()
    saved = list(current_rubric(env_task).criteria.order_by("position").values_list("text", "points", "tag"))
    assert saved == [("One", 5, "important"), ("Two", -3, "pitfall")]


def test_an_edit_that_cannot_be_saved_stops_both_and_says_which(author, env_task):
    rubric = current_rubric(env_task)
    first = rubric.criteria.get(text="States fact 1")
    before_revision = rubric.revision
    data = {**task_form(env_task, prompt="A new prompt"), "open_criteria": [str(first.pk)], **open_editor(first, rubric, text="  ")}
    response = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    body = response.content.decode()
    assert response.status_code == 422
    assert "Nothing was saved: criterion 1 is open with an edit that cannot be saved." in body
    assert "A new prompt" in body  # the task form keeps what was typed
    env_task.refresh_from_db()
    assert env_task.prompt == "Read the data room and state the purchase price."
    rubric.refresh_from_db()
    assert rubric.revision == before_revision and rubric.criteria.get(pk=first.pk).text == "States fact 1"

    # A rule of the service (not of the form) refuses the same way: the task is not saved alone.
    data = {**task_form(env_task, prompt="A new prompt"), "open_criteria": [str(first.pk)],
            **open_editor(first, rubric, points=4, tag="pitfall")}
    refused = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    assert refused.status_code == 422 and "A pitfall describes something bad" in refused.content.decode()
    assert "Nothing was saved: criterion 1 (“States fact 1”)" in refused.content.decode()
    env_task.refresh_from_db()
    assert env_task.prompt == "Read the data room and state the purchase price."


def test_a_stale_criterion_editor_is_refused_with_the_task(author, team, env_task):
    from authoring import services

    rubric = current_rubric(env_task)
    first, second = rubric.criteria.order_by("position")
    stale = rubric.revision
    services.criterion_update(criterion=second, user=team.author2, base_revision=stale, text="Changed meanwhile", points=2, tag="optional")
    data = {**task_form(env_task, prompt="Mine"), "open_criteria": [str(first.pk)], **open_editor(first, rubric, text="Mine too")}
    data[f"criterion-{first.pk}-revision"] = stale
    response = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    assert response.status_code == 422 and "was changed by" in response.content.decode()
    env_task.refresh_from_db()
    assert env_task.prompt != "Mine" and not current_rubric(env_task).criteria.filter(text="Mine too").exists()


def test_an_open_editor_without_changes_saves_nothing_extra(author, env_task):
    rubric = current_rubric(env_task)
    first = rubric.criteria.get(text="States fact 1")
    revision = rubric.revision
    data = {**task_form(env_task, title="Renamed"), "open_criteria": [str(first.pk)], **open_editor(first, rubric)}
    response = author.post(reverse("task-editor", args=[env_task.pk]), data, **HX)
    assert response.status_code == 200 and "Saved." in response.content.decode() and not response.has_header("HX-Trigger")
    rubric.refresh_from_db()
    assert rubric.revision == revision


def test_a_criterion_of_another_task_or_project_is_refused(author, team, other_team, env_task, world):
    mine_elsewhere = factories.env_task(world, team.author, title="Another task")
    theirs = factories.env_task(factories.world(other_team.project, other_team.author), other_team.author)
    rubric = current_rubric(env_task)
    for criterion, status in ((current_rubric(mine_elsewhere).criteria.first(), 422), (current_rubric(theirs).criteria.first(), 404)):
        data = {**task_form(env_task, prompt="Not saved"), "open_criteria": [str(criterion.pk)],
                **open_editor(criterion, rubric, text="Hijacked")}
        assert author.post(reverse("task-editor", args=[env_task.pk]), data, **HX).status_code == status
        criterion.refresh_from_db()
        assert criterion.text != "Hijacked"
    env_task.refresh_from_db()
    assert env_task.prompt != "Not saved"


def test_the_task_page_loads_the_guard_and_marks_the_criterion_editors(author, env_task):
    page = author.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert '<script src="/static/js/unsaved.js" defer>' in page
    criterion = current_rubric(env_task).criteria.first()
    editor = author.get(reverse("criterion-row", args=[criterion.pk]) + "?edit=1", **HX).content.decode()
    assert f'<tr id="criterion-{criterion.pk}" class="editing">' in editor and ">States fact 1</textarea>" in editor
