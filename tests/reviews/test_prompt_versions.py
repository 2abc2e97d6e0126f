"""The task's prompt and reference answer as each trial batch and each submission kept them,
and any two compared word by word (reviews.views.versions)."""

import pytest
from django.urls import reverse

from authoring import services as authoring_services
from reviews import services
from tests.reviews.test_evidence import graded_batch

SCRIPT = "<script>alert(1)</script>"
HX = {"HTTP_HX_REQUEST": "true"}


def set_prompt(env_task, user, prompt: str, reference: str):
    env_task.refresh_from_db()
    return authoring_services.env_task_update(env_task=env_task, user=user, base_revision=env_task.revision, title=env_task.title,
                                              prompt=prompt, deliverable_kind=env_task.deliverable_kind, reference_answer=reference)


@pytest.fixture
def history(team, env_task):
    """A trial batch on the first prompt, then a submission of a rewritten one (with a script in it)."""
    batch = graded_batch(env_task, [1.0, 0.0])
    batch.task_snapshot = {"title": env_task.title, "prompt": "State the purchase price of Beta."}
    batch.save(update_fields=["task_snapshot"])
    set_prompt(env_task, team.author, f"State the purchase price of Beta and the escrow. {SCRIPT}", "The price is $14m.")
    submission = services.submission_create(env_task=env_task, user=team.author)
    return batch, submission


def test_versions_listed_and_any_two_compared(client, team, env_task, history):
    batch, _ = history
    client.force_login(team.author)
    url = reverse("prompt-versions", args=[env_task.pk])
    page = client.get(url, {"a": f"b{batch.pk}", "b": "s1"}).content.decode()
    listing = page.split('id="prompt-version-list"')[1]
    assert f"Trial batch {batch.pk}" in listing and "Submission v1" in listing and "Now" in listing
    prompt = page.split('id="diff-prompt"')[1].split("</div>")[0]
    assert "Beta<ins> and the escrow</ins>." in prompt.replace("</ins><ins>", "")
    assert "&lt;script&gt;" in prompt and SCRIPT not in page
    # A trial batch keeps no reference answer: said in words, not shown as a deletion.
    assert "Not kept for a trial batch" in page
    # Submitted, the task is not being edited: "Now" says what it is.
    assert "Now (the task as it stands: in review, not being edited)" in listing
    assert "the task as it is being edited" not in listing


def test_reference_answer_compared_between_a_submission_and_now(client, team, env_task, history):
    client.force_login(team.author)
    url = reverse("prompt-versions", args=[env_task.pk])
    assert "read the same in both" in client.get(url, {"a": "s1", "b": "now"}).content.decode()


def test_htmx_compare_returns_the_partial(client, team, env_task, history):
    batch, _ = history
    client.force_login(team.reviewer)
    response = client.get(reverse("prompt-versions", args=[env_task.pk]), {"a": "s1", "b": f"b{batch.pk}"}, **HX)
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="prompt-compare"') and "<h1>" not in page
    assert "<del> and the escrow</del>" in page.replace("</del><del>", "")


def test_invalid_version_says_so(client, team, env_task, history):
    client.force_login(team.author)
    page = client.get(reverse("prompt-versions", args=[env_task.pk]), {"a": "s9", "b": "now"}).content.decode()
    assert "There is no version “s9”" in page and 'id="diff-prompt"' not in page


def test_a_task_never_submitted_or_run_says_what_to_do_and_the_task_page_links_here(client, team, env_task):
    client.force_login(team.author)
    page = client.get(reverse("prompt-versions", args=[env_task.pk])).content.decode()
    assert 'id="prompt-versions-empty"' in page
    task_page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert reverse("prompt-versions", args=[env_task.pk]) in task_page


def test_outsiders_get_404(client, other_team, env_task):
    client.force_login(other_team.author)
    assert client.get(reverse("prompt-versions", args=[env_task.pk])).status_code == 404
