"""The pages end to end through the test client: full pages and the htmx partials,
checking both what the user sees and what the database holds."""

import html

import pytest
from django.urls import reverse

from authoring.models import Document, EnvTaskStatus
from reviews.models import SubmissionStatus
from tests import factories

HX = {"HTTP_HX_REQUEST": "true"}


def text(response) -> str:
    """The page as the user reads it (entities decoded)."""
    return html.unescape(response.content.decode())


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


def test_dashboard_shows_drafts_queue_and_projects(client, team, env_task):
    client.force_login(team.author)
    page = text(client.get(reverse("dashboard")))
    assert env_task.title in page and team.project.name in page
    # An author is not offered a queue of their own, nor a reviewer the writing of tasks.
    assert "You review in no project" in page and "Nothing waits for your review." not in page
    client.force_login(team.reviewer)
    page = text(client.get(reverse("dashboard")))
    assert "Nothing waits for your review." in page
    assert "No drafts: your role is to review, not to write tasks." in page and "“New task”" not in page


def test_world_editor_full_page_and_saving_the_scenario_as_htmx(author_client, world):
    url = reverse("world-editor", args=[world.pk])
    page = author_client.get(url).content.decode()
    assert "Data room" in page and "Doc 1.md" in page
    response = author_client.post(
        url,
        {"title": "Renamed", "outline": "New *outline*", "revision": world.revision, "fact_key": ["Price", ""], "fact_value": ["$13m", ""]},
        **HX,
    )
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section id="world-form"') and "<html" not in fragment
    assert "Saved." in fragment and "<em>outline</em>" in fragment
    world.refresh_from_db()
    assert (world.title, world.facts) == ("Renamed", [{"key": "Price", "value": "$13m"}])


def test_stale_world_save_is_refused_and_keeps_the_users_text(author_client, team, world):
    url = reverse("world-editor", args=[world.pk])
    stale = world.revision
    author_client.post(url, {"title": world.title, "outline": "First save", "revision": stale}, **HX)
    response = author_client.post(url, {"title": world.title, "outline": "My careful rewrite", "revision": stale}, **HX)
    assert response.status_code == 409
    fragment = response.content.decode()
    assert "Not saved." in fragment and "since you opened it" in fragment
    assert "My careful rewrite" in fragment  # the user's text is still in the form
    # and the saved text is shown with what the user's changes in it marked
    assert '<div class="diff diff-words"><del>First</del><ins>My</ins> <del>save</del><ins>careful rewrite</ins></div>' in fragment
    world.refresh_from_db()
    assert world.outline == "First save"


def test_data_room_add_edit_move_delete_with_htmx(author_client, world):
    add = author_client.post(
        reverse("document-add", args=[world.pk]),
        {"path": "Mail/Kickoff", "kind": "email", "format": "", "brief": "Kick-off email", "target_size": 150},
        **HX,
    )
    assert add.status_code == 200 and 'id="data-room"' in add.content.decode() and "Kickoff" in add.content.decode()
    doc = Document.objects.get(world=world, path="Mail/Kickoff")
    assert doc.kind == "email" and doc.format == ""

    row_form = author_client.get(reverse("document-row", args=[doc.pk]) + "?edit=1", **HX).content.decode()
    assert 'class="editing"' in row_form and "Kick-off email" in row_form
    edit = author_client.post(
        reverse("document-row", args=[doc.pk]),
        {"path": "Mail/Kick-off", "kind": "email", "format": "", "brief": "Kick-off", "target_size": 200, "revision": doc.revision},
        **HX,
    )
    assert edit.status_code == 200 and "Kick-off" in edit.content.decode()
    doc.refresh_from_db()
    assert (doc.path, doc.target_size) == ("Mail/Kick-off", 200)

    author_client.post(reverse("document-move", args=[doc.pk]), {"direction": "up"}, **HX)
    assert list(world.documents.values_list("path", flat=True))[-2:] == ["Mail/Kick-off", "Deal/Doc 2.md"]

    author_client.post(reverse("document-delete", args=[doc.pk]), **HX)
    assert not Document.objects.filter(pk=doc.pk).exists()


def test_bad_skeleton_line_is_a_clear_error_and_keeps_the_form(author_client, world):
    response = author_client.post(
        reverse("document-add", args=[world.pk]),
        {"path": "../../etc/passwd", "kind": "file", "format": "md", "brief": "my brief", "target_size": 10},
        **HX,
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "is not a valid data-room path" in page and "my brief" in page
    assert world.documents.count() == 2


def test_plain_form_post_redirects(author_client, world):
    response = author_client.post(
        reverse("document-add", args=[world.pk]), {"path": "Notes.md", "kind": "file", "format": "", "brief": "", "target_size": 10}
    )
    assert response.status_code == 302 and response["Location"] == reverse("world-editor", args=[world.pk])


def test_document_editor_saves_and_previews_sanitized(author_client, world):
    doc = world.documents.first()
    url = reverse("document-editor", args=[doc.pk])
    payload = {"path": doc.path, "kind": "file", "format": "md", "brief": "b", "target_size": 100, "revision": doc.revision,
               "content": "# Heading\n<script>alert(1)</script>", "meta_subject": "LOI", "meta_from": "cfo@acme.test"}
    response = author_client.post(url, payload, **HX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert "<h1>Heading</h1>" in fragment and "<script>alert" not in fragment
    doc.refresh_from_db()
    assert doc.metadata == {"from": "cfo@acme.test", "subject": "LOI"} and doc.status == "edited"
    preview = author_client.post(
        reverse("document-preview", args=[doc.pk]), {"content": "**bold** [x](javascript:alert(1))"}, **HX
    ).content.decode()
    assert "<strong>bold</strong>" in preview and 'href="javascript:' not in preview


def test_task_editor_and_rubric_partials(author_client, env_task):
    url = reverse("task-editor", args=[env_task.pk])
    page = author_client.get(url).content.decode()
    assert 'id="positive-points">9<' in page  # 5 + 4
    response = author_client.post(
        url,
        {
            "title": env_task.title,
            "prompt": "New prompt",
            "deliverable_kind": "answer",
            "reference_answer": "Ref",
            "revision": env_task.revision,
        },
        **HX,
    )
    assert response.status_code == 200 and "Saved." in response.content.decode()
    rubric = env_task.rubric_versions.get()
    added = author_client.post(
        reverse("criterion-add", args=[env_task.pk]),
        {"text": "Names the lender", "points": 3, "tag": "essential", "explanation": "", "revision": rubric.revision},
        **HX,
    )
    fragment = added.content.decode()
    assert fragment.lstrip().startswith('<section id="rubric"') and 'id="positive-points">12<' in fragment
    penalty = author_client.post(
        reverse("criterion-add", args=[env_task.pk]),
        {"text": "Hedges", "points": -5, "tag": "pitfall", "explanation": "", "revision": rubric.revision + 1},
        **HX,
    )
    assert 'id="positive-points">12<' in penalty.content.decode()
    criterion = rubric.criteria.get(text="Names the lender")
    author_client.post(reverse("criterion-move", args=[criterion.pk]), {"direction": "up", "revision": rubric.revision + 2}, **HX)
    assert list(rubric.criteria.values_list("text", flat=True)) == ["States fact 1", "Names the lender", "States fact 2", "Hedges"]
    edited = author_client.post(
        reverse("criterion-row", args=[criterion.pk]),
        {"text": "Names the lender and the loan", "points": 4, "tag": "essential", "explanation": "", "revision": rubric.revision + 3},
        **HX,
    )
    assert 'id="positive-points">13<' in edited.content.decode()
    deleted = author_client.post(reverse("criterion-delete", args=[criterion.pk]), {"revision": rubric.revision + 4}, **HX)
    assert 'id="positive-points">9<' in deleted.content.decode()


def test_whole_review_path_through_the_pages(client, team, env_task):
    client.force_login(team.author)
    client.post(reverse("task-submit", args=[env_task.pk]))
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.IN_REVIEW
    assert "read-only" in client.get(reverse("task-editor", args=[env_task.pk])).content.decode()

    client.force_login(team.reviewer)
    assert env_task.title in client.get(reverse("review-queue")).content.decode()
    claimed = client.post(reverse("review-claim-next"))
    review_url = claimed["Location"]
    page = client.get(review_url).content.decode()
    assert "Your checklist and decision" in page and "States fact 1" in page and "Acme acquires Beta" in page
    submission = env_task.submissions.get()
    answers = {f"check-{mark.item_id}": "pass" for mark in factories.checklist(team.project.pk)}
    unanswered = client.post(reverse("submission-decide", args=[submission.pk]), {"decision": "approve"})
    assert unanswered.status_code == 422 and "Answer every checklist item" in unanswered.content.decode()
    empty = client.post(reverse("submission-decide", args=[submission.pk]), {"decision": "request_changes", "comment": "", **answers})
    assert empty.status_code == 422 and "Say what needs to change" in empty.content.decode()
    # The refused form keeps the reviewer's answers.
    assert empty.content.decode().count('value="pass" id="check-') == 5 and empty.content.decode().count("checked> Pass") == 5
    client.post(
        reverse("submission-decide", args=[submission.pk]),
        {"decision": "request_changes", "comment": "Add the *escrow* criterion.", **answers},
    )

    client.force_login(team.author)
    feedback = client.get(reverse("task-reviews", args=[env_task.pk]), **HX).content.decode()
    assert "Changes requested</strong> by" in feedback and "<em>escrow</em>" in feedback and "Submit for review" in feedback
    client.post(reverse("task-submit", args=[env_task.pk]))
    assert env_task.submissions.count() == 2

    client.force_login(team.reviewer)
    second = client.post(reverse("review-claim-next"))["Location"]
    client.post(second + "decide/", {"decision": "approve", "comment": "", **answers})
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.APPROVED
    assert env_task.submissions.get(number=2).status == SubmissionStatus.APPROVED


def test_pack_page_builds_and_downloads(client, team, env_task, django_capture_on_commit_callbacks):
    import io
    import zipfile

    from authoring import services as authoring_services
    from reviews import services as review_services

    for document in env_task.world.documents.all():  # a pack holds only documents with content
        authoring_services.document_update(
            document=document, user=team.author, base_revision=document.revision, content="The price is $12m."
        )
    submission = review_services.submission_create(env_task=env_task, user=team.author)
    review_services.submission_claim_next(user=team.reviewer)
    review_services.review_decide(submission=submission, user=team.reviewer, decision="approve",
        checklist=factories.checklist(submission.project_id))
    client.force_login(team.admin)
    url = reverse("pack-list", args=[team.project.pk])
    assert env_task.title in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        unticked = client.post(url, {"name": "first", "submissions": [submission.pk]})
        response = client.post(url, {"name": "first", "submissions": [submission.pk], "formats": ["taskwright", "healthbench"]})
    assert unticked.status_code == 422 and "at least one format" in unticked.content.decode()
    assert response.status_code == 302 and len(callbacks) == 1  # the build is queued after commit
    pack = team.project.packs.get()
    row = client.get(reverse("pack-progress", args=[pack.pk]), **HX).content.decode()
    assert 'hx-trigger="every 2s"' in row and "Queued" in row

    from packs.services import pack_build

    pack_build(pack_id=pack.pk)
    row = client.get(reverse("pack-progress", args=[pack.pk]), **HX).content.decode()
    assert "every 2s" not in row and "Ready" in row and "Download" in row
    download = client.get(reverse("pack-download", args=[pack.pk]))
    assert download["Content-Disposition"].startswith("attachment")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    assert env_task.prompt in archive.read("taskwright/tasks.jsonl").decode()
    assert env_task.prompt in archive.read("healthbench.jsonl").decode()


def test_only_admins_see_packs(client, team):
    for user in (team.author, team.reviewer):
        client.force_login(user)
        assert client.get(reverse("pack-list", args=[team.project.pk])).status_code == 404
