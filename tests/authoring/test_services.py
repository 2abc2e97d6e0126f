import re

import pytest
from django.urls import reverse

from authoring import services
from authoring.models import Document, DocumentStatus, EnvTaskStatus
from core.exceptions import ApplicationError, StaleEditError
from core.models import StatusChange
from tests import factories


def test_world_update_refuses_a_stale_revision_and_shows_what_changed(team, world):
    base = world.revision
    services.world_update(
        world=world, user=team.author2, title=world.title, outline="Beta is the buyer.", facts=world.facts, base_revision=base
    )
    with pytest.raises(StaleEditError) as caught:
        services.world_update(
            world=world, user=team.author, title=world.title, outline="Acme is the buyer.", facts=world.facts, base_revision=base
        )
    assert team.author2.username in caught.value.message
    change = caught.value.extra["changes"]["outline"]
    assert change["saved"] == "Beta is the buyer."
    assert "-Beta is the buyer." in change["diff"] and "+Acme is the buyer." in change["diff"]
    assert str(change["html"]) == "<del>Beta</del><ins>Acme</ins> is the buyer."
    world.refresh_from_db()
    assert world.outline == "Beta is the buyer."


def test_a_stale_edit_of_the_facts_reads_as_facts_not_as_code(client, team, world):
    """The conflict showed the facts sheet as a Python repr in a unified diff
    (+[{'key': 'Tab B fact', 'value': 'USD 1'}]); a lawyer reads neither."""
    base = world.revision
    services.world_update(world=world, user=team.author2, title=world.title, outline=world.outline,
                          facts=[{"key": "Rent", "value": "USD 96,000"}], base_revision=base)
    with pytest.raises(StaleEditError) as caught:
        services.world_update(world=world, user=team.author, title=world.title, outline=world.outline,
                              facts=[{"key": "Rent", "value": "USD 69,000"}], base_revision=base)
    html = str(caught.value.extra["changes"]["facts"]["html"])
    assert html == "Rent: USD <del>96</del><ins>69</ins>,000" and "'key'" not in caught.value.extra["changes"]["facts"]["diff"]


def test_facts_are_cleaned_and_bad_rows_refused(team, world):
    world = services.world_update(
        world=world, user=team.author, title="T", outline="", base_revision=world.revision,
        facts=[{"key": " Price ", "value": "$12m"}, {"key": "", "value": ""}],
    )
    assert world.facts == [{"key": "Price", "value": "$12m"}]
    with pytest.raises(ApplicationError, match="has a value but no key"):
        services.world_update(world=world, user=team.author, title="T", outline="", facts=[{"key": "", "value": "x"}], base_revision=None)


@pytest.mark.parametrize("path", ["../etc/passwd", "/abs/file.md", "a//b.md", "a/./b.md", ""])
def test_document_paths_cannot_escape_the_data_room(team, world, path):
    with pytest.raises(ApplicationError):
        services.document_create(world=world, user=team.author, path=path)
    assert not Document.objects.filter(world=world, path=path).exists()


def test_document_format_comes_from_the_path_and_duplicates_are_refused(team, world):
    doc = services.document_create(world=world, user=team.author, path="Finance/Cap table.xlsx")
    assert doc.format == "xlsx" and doc.status == DocumentStatus.SKELETON
    with pytest.raises(ApplicationError, match="already a document"):
        services.document_create(world=world, user=team.author, path="Finance/Cap table.xlsx")
    with pytest.raises(ApplicationError, match="Unknown file format"):
        services.document_create(world=world, user=team.author, path="Finance/run.exe")
    with pytest.raises(ApplicationError, match=r"A file's path ends with its format, e\.g\. Finance/Budget\.docx: one of \.docx, "):
        services.document_create(world=world, user=team.author, path="Finance/Budget")


def test_locked_document_content_cannot_change_until_unlocked(team, world):
    doc = world.documents.first()
    doc = services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="Final.", locked=True)
    assert doc.status == DocumentStatus.LOCKED
    with pytest.raises(ApplicationError, match="locked"):
        services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="Changed.")
    doc = services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="Changed.", locked=False)
    assert doc.content == "Changed." and doc.status == DocumentStatus.EDITED


def test_document_move_reorders(team, world):
    first, second = list(world.documents.order_by("position"))
    services.document_move(document=second, user=team.author, direction="up")
    assert list(world.documents.order_by("position").values_list("pk", flat=True)) == [second.pk, first.pk]


def test_reviewer_cannot_edit_content(team, world, env_task):
    with pytest.raises(ApplicationError, match="cannot edit content"):
        services.document_create(world=world, user=team.reviewer, path="x.md")
    with pytest.raises(ApplicationError, match="cannot edit content"):
        services.env_task_update(
            env_task=env_task, user=team.reviewer, base_revision=None, title="x", prompt="y", deliverable_kind="answer", reference_answer=""
        )


def test_rubric_total_and_criterion_validation(team, env_task):
    rubric = env_task.rubric_versions.get()
    with pytest.raises(ApplicationError, match="pitfall"):
        services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Bad", points=3, tag="pitfall")
    with pytest.raises(ApplicationError, match="not zero"):
        services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Zero", points=0)
    services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Hedges", points=-2, tag="pitfall")
    rubric.refresh_from_db()
    assert [c.points for c in rubric.criteria.all()] == [5, 4, -2]


def test_stale_rubric_edit_is_refused(team, env_task):
    rubric = env_task.rubric_versions.get()
    base = rubric.revision
    services.criterion_add(env_task=env_task, user=team.author2, base_revision=base, text="Cites the SPA clause", points=2)
    with pytest.raises(StaleEditError):
        services.criterion_add(env_task=env_task, user=team.author, base_revision=base, text="Another", points=1)
    assert rubric.criteria.count() == 3


def test_frozen_rubric_version_is_never_edited_a_new_version_is_made(team, env_task):
    from reviews import services as review_services

    submission = review_services.submission_create(env_task=env_task, user=team.author)
    review_services.submission_claim_next(user=team.reviewer)
    review_services.review_decide(
        submission=submission, user=team.reviewer, decision="request_changes", comment="Add a criterion on the escrow.",
            checklist=factories.checklist(submission.project_id))
    v1 = env_task.rubric_versions.get(number=1)
    criterion = v1.criteria.first()
    services.criterion_update(
        criterion=criterion, user=team.author, base_revision=v1.revision, text="Edited text", points=7, tag="essential"
    )
    v1.refresh_from_db()
    assert [c.text for c in v1.criteria.all()] == ["States fact 1", "States fact 2"]
    v2 = env_task.rubric_versions.get(number=2)
    assert [c.text for c in v2.criteria.all()] == ["Edited text", "States fact 2"]
    assert submission.snapshot["rubric"]["criteria"][0]["text"] == "States fact 1"


def test_task_lifecycle_is_recorded(team, env_task):
    from reviews import services as review_services

    review_services.submission_create(env_task=env_task, user=team.author)
    changes = list(
        StatusChange.objects.filter(object_id=env_task.pk, content_type__model="envtask").values_list("from_status", "to_status", "actor")
    )
    assert changes == [("", EnvTaskStatus.DRAFT, team.author.pk), (EnvTaskStatus.DRAFT, EnvTaskStatus.IN_REVIEW, team.author.pk)]


def test_oversize_fields_are_refused(team, world):
    with pytest.raises(ApplicationError, match="too long"):
        services.world_update(world=world, user=team.author, title="x" * 201, outline="", facts=[], base_revision=None)
    with pytest.raises(ApplicationError, match="too long"):
        services.document_create(world=world, user=team.author, path="big.md", content="x" * 600_000)


def test_other_project_member_cannot_write(team, other_team, world):
    from django.http import Http404

    with pytest.raises(Http404):
        services.document_create(world=world, user=other_team.admin, path="sneaky.md")
    with pytest.raises(Http404):
        factories.env_task(world, other_team.author)


def test_a_save_without_a_base_revision_is_refused(team, world):
    with pytest.raises(ApplicationError, match="without saying which revision"):
        services.world_update(world=world, user=team.author, title="T", outline="overwrite", facts=[], base_revision=None)
    world.refresh_from_db()
    assert world.outline != "overwrite"


def test_unstorable_text_in_json_fields_is_a_clear_error(team, world):
    with pytest.raises(ApplicationError, match="NUL character"):
        services.world_update(
            world=world, user=team.author, title="T", outline="", facts=[{"key": "a\x00", "value": "b"}], base_revision=world.revision
        )
    with pytest.raises(ApplicationError, match="invalid Unicode"):
        services.document_create(world=world, user=team.author, path="x.md", metadata={"subject": "\ud800"})


def test_the_page_shows_a_stale_edit_as_marked_words_and_keeps_what_was_typed(client, team, world):
    base = world.revision
    services.world_update(world=world, user=team.author2, title=world.title, outline="Beta is the buyer.", facts=world.facts,
                          base_revision=base)
    client.force_login(team.author)
    response = client.post(reverse("world-editor", args=[world.pk]), {"title": world.title, "outline": "Acme is the buyer.",
                                                                       "revision": base})
    page = response.content.decode()
    assert response.status_code == 409
    assert '<div class="diff diff-words"><del>Beta</del><ins>Acme</ins> is the buyer.</div>' in page
    assert "@@" not in page and "Acme is the buyer.</textarea>" in page


def _hidden_revision(page: str) -> str:
    return re.search(r'<input type="hidden" name="revision" value="(\d+)"', page).group(1)


def test_saving_again_after_a_stale_edit_saves_the_users_version(client, team, world):
    """The conflict page says "your version is kept: review the changes and save again":
    the form it shows carries the stored revision, so that second save goes through
    (it kept sending the first revision, and every save was refused the same way)."""
    env_task = factories.env_task(world, team.author, title="Price")
    base = env_task.revision
    services.env_task_update(env_task=env_task, user=team.author2, base_revision=base, title="Price", prompt="What is the purchase price?",
                             deliverable_kind=env_task.deliverable_kind, reference_answer=env_task.reference_answer)
    client.force_login(team.author)
    mine = {"title": "Price", "prompt": "What is the price, and where is it stated?", "deliverable_kind": "answer",
            "reference_answer": "$48.5 million, clause 3.1."}
    refused = client.post(reverse("task-editor", args=[env_task.pk]), {**mine, "revision": base})
    page = refused.content.decode()
    assert refused.status_code == 409 and "save again" in page and "where is it stated?</textarea>" in page
    env_task.refresh_from_db()
    assert _hidden_revision(page) == str(env_task.revision) != str(base)
    saved = client.post(reverse("task-editor", args=[env_task.pk]), {**mine, "revision": _hidden_revision(page)})
    assert saved.status_code == 302
    env_task.refresh_from_db()
    assert (env_task.prompt, env_task.reference_answer) == (mine["prompt"], mine["reference_answer"])

    document = world.documents.first()
    services.document_update(document=document, user=team.author2, base_revision=document.revision, content="Theirs.")
    form = {"path": document.path, "kind": document.kind, "brief": document.brief, "content": "Mine.",
            "target_size": "300", "revision": str(document.revision - 1)}
    refused = client.post(reverse("document-editor", args=[document.pk]), form)
    assert refused.status_code == 409
    saved = client.post(reverse("document-editor", args=[document.pk]), {**form, "revision": _hidden_revision(refused.content.decode())})
    assert saved.status_code in (200, 302), saved.content[:300]
    document.refresh_from_db()
    assert document.content == "Mine."


def test_a_page_save_keeps_the_text_as_typed_with_plain_line_ends(client, team, world):
    """Browsers send a textarea's lines with CRLF and Django stripped the final newline: the
    stored prompt changed on every page save, and the reviewer's version diff listed fields
    the author never touched."""
    from types import SimpleNamespace

    from reviews.selectors.diff import submission_diff

    env_task = factories.env_task(world, team.author, title="Price")
    client.force_login(team.author)
    typed = {"title": "Price", "prompt": "What is the price?\r\nCite the clause.\r\n", "deliverable_kind": "answer",
             "reference_answer": "$48.5 million.\r\n", "revision": env_task.revision}
    assert client.post(reverse("task-editor", args=[env_task.pk]), typed).status_code == 302
    env_task.refresh_from_db()
    assert (env_task.prompt, env_task.reference_answer) == ("What is the price?\nCite the clause.\n", "$48.5 million.\n")

    def version(number, prompt):
        return SimpleNamespace(number=number, rubric_version_id=1, snapshot={"task": {"title": "Price", "prompt": prompt}})

    unchanged = submission_diff(previous=version(1, "What is the price?\nCite the clause.\n"),
                                current=version(2, "What is the price?\r\nCite the clause."))
    assert unchanged["fields"] == [] and unchanged["nothing_changed"]
    changed = submission_diff(previous=version(1, "What is the price?\n"), current=version(2, "What is the purchase price?\n"))
    assert [f["key"] for f in changed["fields"]] == ["prompt"]
