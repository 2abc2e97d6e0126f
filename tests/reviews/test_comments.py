"""QA comments anchored where they belong: the services' rules (who, on what, which words
are kept), the fragments the task, document and trajectory pages load, the page of all of
a task's comments, the API, and comment text that tries to run script."""

import html
import re
from html.parser import HTMLParser

import pytest
from django.http import Http404
from django.urls import reverse

from authoring import services as authoring_services
from authoring.models import Criterion
from core.exceptions import ApplicationError, PermissionRefused
from reviews import services as review_services
from reviews.models import AuditEvent, AuditVerb, CommentAnchor, Notification, ReviewComment
from reviews.selectors.comments import CommentFilter, comment_threads_for_task, comments_resolved_since_previous
from reviews.services.comments import comment_add, comment_reopen, comment_resolve
from rollouts.models import Rollout, RolloutBatch, RolloutStatus, Step, StepKind
from tests import factories

HX = {"HTTP_HX_REQUEST": "true"}
HOSTILE = '<script>alert("x")</script> <img src=x onerror="alert(1)"> [click me](javascript:alert(2)) <a href="#" onclick="x()">a</a>'


def text(response) -> str:
    return html.unescape(response.content.decode())


class _Markup(HTMLParser):
    """What could run: script elements other than our static files, images, event handlers, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script" and not (dict(attrs).get("src") or "").startswith("/static/"):
            self.found.append(f"<script> {attrs}")
        if tag == "img":
            self.found.append(f"<img> {attrs}")
        for name, value in attrs:
            if name.startswith("on") or "javascript:" in (value or ""):
                self.found.append(f"<{tag} {name}={value!r}>")


def unsafe_markup(page: str) -> list[str]:
    parser = _Markup()
    parser.feed(page)
    return parser.found


def criteria(env_task) -> list[Criterion]:
    return list(Criterion.objects.filter(rubric_version__env_task=env_task).order_by("rubric_version__number", "position"))


def make_step(env_task, user, text: str = "I read Deal/Doc 1.md.") -> Step:
    rubric = env_task.rubric_versions.order_by("-number").first()
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
                                        task_snapshot={"title": env_task.title, "prompt": env_task.prompt}, endpoint_name="fake", n=1,
                                        created_by=user)
    rollout = Rollout.objects.create(batch=batch, index=0, status=RolloutStatus.COMPLETED, final_answer="$12m")
    return Step.objects.create(rollout=rollout, index=0, kind=StepKind.MODEL, text=text)


@pytest.fixture
def document(team, world):
    doc = world.documents.order_by("position", "pk").first()
    return authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision,
                                              content="# Letter of intent\n\nThe **purchase price** is $12m,\npayable at closing.\n")


# --- Services ---------------------------------------------------------------------------

def test_a_comment_keeps_the_words_of_what_it_is_about_and_leaves_an_audit_line(team, env_task, document):
    criterion = criteria(env_task)[0]
    on_criterion = comment_add(env_task=env_task, user=team.reviewer, body="Too vague.", anchor=CommentAnchor.CRITERION,
                               criterion=criterion)
    assert on_criterion.criterion_text == "States fact 1" and on_criterion.project_id == team.project.pk
    on_document = comment_add(env_task=env_task, user=team.reviewer, body="Which currency?", anchor=CommentAnchor.DOCUMENT,
                              document=document, quote="purchase price is $12m, payable")  # pasted from the rendered view
    assert (on_document.document_path, on_document.quote) == (document.path, "purchase price is $12m, payable")
    step = make_step(env_task, team.author)
    on_step = comment_add(env_task=env_task, user=team.author, body="Should have searched.", anchor=CommentAnchor.STEP, step=step)
    assert on_step.step_id == step.pk
    lines = list(AuditEvent.objects.filter(env_task=env_task, verb=AuditVerb.COMMENTED).values_list("actor__username", "summary"))
    assert lines == [
        (team.reviewer.username, "Commented on criterion “States fact 1”: Too vague."),
        (team.reviewer.username, f"Commented on document {document.path}: Which currency?"),
        (team.author.username, "Commented on a trajectory step: Should have searched."),
    ]


def test_a_reviewers_comment_tells_the_tasks_authors_not_the_reviewer(team, env_task):
    submission = review_services.submission_create(env_task=env_task, user=team.author)
    comment_add(env_task=env_task, user=team.reviewer, body="The prompt never says which currency.", anchor=CommentAnchor.PROMPT,
                submission=submission)
    notices = list(Notification.objects.values_list("recipient__username", "text"))
    assert notices == [(team.author.username, f"{team.reviewer.username} commented on the prompt of “{env_task.title}”: "
                                              "The prompt never says which currency.")]
    Notification.objects.all().delete()
    comment_add(env_task=env_task, user=team.author, body="Note to self.", anchor=CommentAnchor.PROMPT)
    assert not Notification.objects.exists()  # an author's own first comment tells nobody


@pytest.mark.parametrize("case", ["criterion of another task", "document of another world", "step of another task",
                                  "quote not in the document", "quote too long", "empty body", "body too long", "stray criterion",
                                  "criterion missing", "unknown anchor"])
def test_what_a_comment_may_not_be(team, env_task, world, document, case):
    other_world = factories.world(team.project, team.author, title="Another deal", documents=1)
    other_task = factories.env_task(world, team.author, title="Another task")
    kwargs = {"env_task": env_task, "user": team.reviewer, "body": "A comment."}
    expected = {
        "criterion of another task": ({"anchor": "criterion", "criterion": criteria(other_task)[0]}, "another task's rubric"),
        "document of another world": ({"anchor": "document", "document": other_world.documents.first()}, "not in this task's world"),
        "step of another task": ({"anchor": "step", "step": make_step(other_task, team.author)}, "rollout of another task"),
        "quote not in the document": ({"anchor": "document", "document": document, "quote": "The price is $15m"},
                                      "not in the document"),
        "quote too long": ({"anchor": "document", "document": document, "quote": "x" * 2001}, "at most 2,000 characters"),
        "empty body": ({"anchor": "prompt", "body": "   "}, "Write the comment first"),
        "body too long": ({"anchor": "prompt", "body": "x" * 20_001}, "at most 20,000 characters"),
        "stray criterion": ({"anchor": "prompt", "criterion": criteria(env_task)[0]}, "not also about a criterion"),
        "criterion missing": ({"anchor": "criterion"}, "Choose the rubric criterion"),
        "unknown anchor": ({"anchor": "teapot"}, "Unknown place"),
    }[case]
    with pytest.raises(ApplicationError, match=expected[1]):
        comment_add(**kwargs | expected[0])
    assert not ReviewComment.objects.exists() and not AuditEvent.objects.filter(verb=AuditVerb.COMMENTED).exists()


def test_someone_outside_the_project_cannot_comment(team, other_team, env_task):
    with pytest.raises(Http404):
        comment_add(env_task=env_task, user=other_team.admin, body="Hello", anchor=CommentAnchor.TASK)


def test_a_reply_joins_the_thread_takes_its_anchor_and_tells_its_participants(team, env_task):
    criterion = criteria(env_task)[1]
    root = comment_add(env_task=env_task, user=team.reviewer, body="Points too high?", anchor=CommentAnchor.CRITERION, criterion=criterion)
    first = comment_add(env_task=env_task, user=team.author, body="It is the key fact.", parent=root)
    Notification.objects.all().delete()
    # A reply to a reply goes in the same thread; the anchor given is ignored for the parent's.
    second = comment_add(env_task=env_task, user=team.admin, body="Agreed with the author.", parent=first, anchor=CommentAnchor.PROMPT)
    assert (first.parent_id, second.parent_id) == (root.pk, root.pk)
    assert (second.anchor, second.criterion_id, second.criterion_text) == ("criterion", criterion.pk, criterion.text)
    told = sorted(Notification.objects.values_list("recipient__username", flat=True))
    assert told == sorted([team.author.username, team.reviewer.username])  # never the admin who replied
    assert Notification.objects.filter(recipient=team.reviewer, text__contains="replied on criterion “States fact 2”").exists()


def test_resolving_a_reply_resolves_the_thread_and_reopening_opens_it(team, env_task):
    root = comment_add(env_task=env_task, user=team.reviewer, body="Unclear.", anchor=CommentAnchor.REFERENCE)
    reply = comment_add(env_task=env_task, user=team.author, body="Fixed in v2.", parent=root)
    resolved = comment_resolve(comment=reply, user=team.author)  # the task's author
    root.refresh_from_db()
    reply.refresh_from_db()
    assert resolved.pk == root.pk and root.resolved_by == team.author and root.resolved_at is not None and reply.resolved_at is None
    assert comment_resolve(comment=root, user=team.reviewer).resolved_by == team.author  # already resolved: unchanged
    comment_reopen(comment=root, user=team.reviewer)
    root.refresh_from_db()
    assert root.resolved_at is None and root.resolved_by is None
    verbs = list(AuditEvent.objects.filter(env_task=env_task).exclude(verb=AuditVerb.COMMENTED).values_list("verb", "actor__username"))
    assert verbs == [(AuditVerb.COMMENT_RESOLVED, team.author.username), (AuditVerb.COMMENT_REOPENED, team.reviewer.username)]


def test_only_the_tasks_authors_reviewers_and_admins_resolve(team, env_task):
    root = comment_add(env_task=env_task, user=team.reviewer, body="Unclear.", anchor=CommentAnchor.PROMPT)
    with pytest.raises(PermissionRefused, match="Only the task's authors, reviewers and admins resolve"):
        comment_resolve(comment=root, user=team.author2)  # an author of the project, not of this task
    root.refresh_from_db()
    assert root.resolved_at is None
    comment_resolve(comment=root, user=team.admin)
    with pytest.raises(PermissionRefused):
        comment_reopen(comment=root, user=team.author2)


def test_a_criterion_comment_follows_the_same_words_into_the_next_rubric_version(team, env_task):
    v1_criterion, v1_other = criteria(env_task)
    comment = comment_add(env_task=env_task, user=team.reviewer, body="Name the source.", anchor=CommentAnchor.CRITERION,
                          criterion=v1_criterion)
    rubric = env_task.rubric_versions.get()
    authoring_services.rubric_version_freeze(rubric_version=rubric)
    authoring_services.criterion_update(criterion=v1_other, user=team.author, base_revision=rubric.revision, text="States fact two",
                                        points=3, tag=v1_other.tag)
    v2 = env_task.rubric_versions.get(number=2)
    v2_same = v2.criteria.get(text="States fact 1")
    v2_changed = v2.criteria.get(text="States fact two")
    on_same = comment_threads_for_task(user=team.author, env_task=env_task, where=CommentFilter(anchor="criterion", criterion=v2_same))
    assert list(on_same) == [comment]
    on_changed = CommentFilter(anchor="criterion", criterion=v2_changed)
    assert list(comment_threads_for_task(user=team.author, env_task=env_task, where=on_changed)) == []
    # On the page, the row of version 2's criterion shows it, saying where it was made.
    client_fragment = _client_for(team.author).get(
        reverse("task-comments", args=[env_task.pk]) + f"?anchor=criterion&criterion={v2_same.pk}", **HX)
    assert "Name the source." in text(client_fragment) and "made on rubric version 1" in text(client_fragment)


def test_the_comments_resolved_since_the_previous_version(team, env_task):
    first = review_services.submission_create(env_task=env_task, user=team.author)
    settled = comment_add(env_task=env_task, user=team.reviewer, body="Fix the price.", anchor=CommentAnchor.PROMPT, submission=first)
    still_open = comment_add(env_task=env_task, user=team.reviewer, body="And the date.", anchor=CommentAnchor.PROMPT, submission=first)
    send_back(team, first)
    comment_resolve(comment=settled, user=team.author)
    second = review_services.submission_create(env_task=env_task, user=team.author)
    comment_resolve(comment=still_open, user=team.author)  # after version 2 was submitted: not "since the previous version"
    assert list(comments_resolved_since_previous(user=team.reviewer, submission=second)) == [settled]
    assert list(comments_resolved_since_previous(user=team.reviewer, submission=first)) == []
    fragment = text(_client_for(team.reviewer).get(
        reverse("task-comments", args=[env_task.pk]) + f"?view=resolved&submission={second.pk}", **HX))
    assert "Fix the price." in fragment and "And the date." not in fragment and "resolved by " + team.author.username in fragment


def send_back(team, submission) -> None:
    from reviews.selectors import checklist_items

    assert review_services.submission_claim_next(user=team.reviewer) == submission
    marks = [review_services.ChecklistMark(item_id=item.pk, passed=False) for item in checklist_items(project_id=team.project.pk)]
    review_services.review_decide(submission=submission, user=team.reviewer, decision="request_changes", checklist=marks,
                                  comment="See my comments.")


def _client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


# --- Pages ----------------------------------------------------------------------------

def comments_url(env_task, query: str = "") -> str:
    return reverse("task-comments", args=[env_task.pk]) + query


def test_the_task_page_loads_the_comments_beside_the_prompt_each_criterion_and_the_open_list(client, team, env_task):
    client.force_login(team.author)
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    for query in ["?anchor=prompt", "?anchor=reference", *(f"?anchor=criterion&amp;criterion={c.pk}" for c in criteria(env_task))]:
        assert f'hx-get="{comments_url(env_task, query)}" hx-trigger="load"' in page, query
    # The open comments are listed in the Review tab.
    review_tab = client.get(reverse("task-editor", args=[env_task.pk]) + "?tab=review").content.decode()
    assert f'hx-get="{comments_url(env_task, "?view=open")}" hx-trigger="load"' in review_tab
    # Without JavaScript, each placeholder is a link to the same comments.
    assert f'href="{comments_url(env_task, "?anchor=prompt")}">Comments on the prompt</a>' in page


def test_a_reviewer_sees_the_comment_form_on_a_task_in_review_and_adds_a_comment(client, team, env_task):
    review_services.submission_create(env_task=env_task, user=team.author)
    client.force_login(team.reviewer)
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert 'name="prompt"' not in page  # the reviewer cannot edit the task...
    assert f'hx-get="{comments_url(env_task, "?anchor=prompt")}"' in page  # ...but its comments load
    criterion = criteria(env_task)[0]
    fragment = client.get(comments_url(env_task, f"?anchor=criterion&criterion={criterion.pk}"), **HX)
    body = fragment.content.decode()
    block = f"comments-{env_task.pk}-criterion-{criterion.pk}"
    assert body.lstrip().startswith(f'<div class="qa-comments" id="{block}">')
    assert "Comment on this criterion" in body and f'name="criterion" value="{criterion.pk}"' in body
    assert "<html" not in body  # a fragment, not a page

    added = client.post(comments_url(env_task), {"anchor": "criterion", "criterion": criterion.pk, "body": "Say *which* fact."}, **HX)
    assert added.status_code == 200 and added["HX-Trigger"] == "comments-changed"
    fragment = added.content.decode()
    assert fragment.lstrip().startswith(f'<div class="qa-comments" id="{block}">')
    assert "<em>which</em>" in fragment and "1 open comment" in fragment and team.reviewer.username in fragment
    comment = ReviewComment.objects.get()
    assert (comment.author, comment.anchor, comment.criterion, comment.criterion_text) == (team.reviewer, "criterion", criterion,
                                                                                           "States fact 1")
    # The author's task page lists it as open, linked to the criterion's row.
    client.force_login(team.author)
    card = client.get(comments_url(env_task, "?view=open"), **HX).content.decode()
    assert "Open comments (1)" in card
    assert f'href="{reverse("task-editor", args=[env_task.pk])}#criterion-{criterion.pk}">Criterion “States fact 1”</a>' in card


def test_an_empty_comment_is_refused_in_place_keeping_nothing(client, team, env_task):
    client.force_login(team.reviewer)
    refused = client.post(comments_url(env_task), {"anchor": "prompt", "body": "  "}, **HX)
    assert refused.status_code == 422 and "Write the comment first." in text(refused)
    assert f'id="comments-{env_task.pk}-prompt"' in refused.content.decode()
    other_task = factories.env_task(env_task.world, team.author, title="Other")
    foreign = client.post(comments_url(env_task), {"anchor": "criterion", "criterion": criteria(other_task)[0].pk, "body": "Hi"}, **HX)
    assert foreign.status_code == 422 and "is not part of this task" in text(foreign)
    assert not ReviewComment.objects.exists()


def test_a_plain_form_post_goes_back_to_a_safe_next_or_the_task_page(client, team, env_task):
    client.force_login(team.reviewer)
    back = client.post(comments_url(env_task), {"anchor": "task", "body": "General.", "next": comments_url(env_task)})
    assert back.status_code == 302 and back["Location"] == comments_url(env_task)
    offsite = client.post(comments_url(env_task), {"anchor": "task", "body": "Again.", "next": "https://evil.example/"})
    assert offsite["Location"] == reverse("task-editor", args=[env_task.pk])
    refused = client.post(comments_url(env_task), {"anchor": "task", "body": ""}, follow=True)
    assert "Write the comment first." in text(refused)
    assert ReviewComment.objects.count() == 2


def test_reply_resolve_and_reopen_answer_the_updated_thread(client, team, env_task):
    root = comment_add(env_task=env_task, user=team.reviewer, body="Which currency?", anchor=CommentAnchor.PROMPT)
    client.force_login(team.author)
    replied = client.post(reverse("comment-reply", args=[root.pk]), {"body": "US dollars."}, **HX)
    fragment = replied.content.decode()
    assert replied.status_code == 200 and fragment.lstrip().startswith(f'<li class="qa-thread" id="comment-{root.pk}">')
    assert "Which currency?" in fragment and "US dollars." in fragment and ">Resolve</button>" in fragment
    resolved = client.post(reverse("comment-resolve", args=[root.pk]), **HX).content.decode()
    assert "qa-resolved" in resolved and ">Reopen</button>" in resolved and f"by {team.author.username}" in resolved
    assert ReviewComment.objects.get(pk=root.pk).resolved_by == team.author
    reopened = client.post(reverse("comment-reopen", args=[root.pk]), **HX).content.decode()
    assert "qa-resolved" not in reopened and ReviewComment.objects.get(pk=root.pk).resolved_at is None
    plain = client.post(reverse("comment-resolve", args=[root.pk]))
    assert plain.status_code == 302 and plain["Location"] == comments_url(env_task, f"#comment-{root.pk}")
    empty = client.post(reverse("comment-reply", args=[root.pk]), {"body": ""}, **HX)
    assert empty.status_code == 422 and "Write the comment first." in text(empty)


def test_an_author_of_another_task_sees_no_resolve_button_and_is_refused(client, team, env_task):
    root = comment_add(env_task=env_task, user=team.reviewer, body="Unclear.", anchor=CommentAnchor.PROMPT)
    client.force_login(team.author2)
    block = client.get(comments_url(env_task, "?anchor=prompt"), **HX).content.decode()
    assert "Unclear." in block and ">Resolve</button>" not in block and ">Reply</button>" in block
    refused = client.post(reverse("comment-resolve", args=[root.pk]), **HX)
    assert refused.status_code == 403 and "Only the task's authors, reviewers and admins" in text(refused)
    assert ReviewComment.objects.get(pk=root.pk).resolved_at is None


def test_the_page_of_all_comments_shows_each_with_where_it_sits(client, team, env_task, document):
    step = make_step(env_task, team.author)
    comment_add(env_task=env_task, user=team.reviewer, body="On the step.", anchor=CommentAnchor.STEP, step=step)
    comment_add(env_task=env_task, user=team.reviewer, body="On the document.", anchor=CommentAnchor.DOCUMENT, document=document,
                quote="payable at closing")
    done = comment_add(env_task=env_task, user=team.reviewer, body="Settled one.", anchor=CommentAnchor.TASK)
    comment_resolve(comment=done, user=team.reviewer)
    client.force_login(team.author)
    page = text(client.get(comments_url(env_task)))
    assert "All comments (3)" in page
    assert "Step 1 of rollout 1, trial batch" in page and f"Document {document.path}" in page and "payable at closing" in page
    assert f'href="{reverse("rollout-detail", args=[step.rollout_id])}#step-{step.pk}"' in page
    assert f'href="{reverse("document-editor", args=[document.pk])}"' in page
    only_open = text(client.get(comments_url(env_task, "?open=1")))
    assert "Open comments (2)" in only_open and "Settled one." not in only_open
    fragment = client.get(comments_url(env_task, "?open=1"), **HX).content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="task-threads">')
    anchored = text(client.get(comments_url(env_task, f"?anchor=step&step={step.pk}")))  # the no-JS link of a step
    assert "<html" in anchored and 'id="anchor-comments"' in anchored and "1 open comment</strong> on this step" in anchored
    assert "On the document." not in anchored  # only the step's comments


def test_the_document_page_and_the_trajectory_load_their_comments(client, team, env_task, document):
    step = make_step(env_task, team.author)
    client.force_login(team.reviewer)
    doc_page = client.get(reverse("document-editor", args=[document.pk])).content.decode()
    assert 'name="content"' not in doc_page  # a reviewer cannot edit the document...
    assert f'hx-get="{comments_url(env_task, f"?anchor=document&amp;document={document.pk}&amp;show_task=1")}"' in doc_page
    block = client.get(comments_url(env_task, f"?anchor=document&document={document.pk}&show_task=1"), **HX).content.decode()
    assert 'name="quote"' in block and f"Comments for the task “{env_task.title}”" in html.unescape(block)
    quoted = client.post(comments_url(env_task), {"anchor": "document", "document": document.pk, "quote": "The price is $99",
                                                  "body": "Hm.", "show_task": "1"}, **HX)
    assert quoted.status_code == 422 and "The quoted passage is not in the document" in text(quoted)
    assert "The price is $99" in text(quoted)  # what was typed stays on screen
    rollout_page = client.get(reverse("rollout-detail", args=[step.rollout_id])).content.decode()
    # Loaded when opened, like a step's request and response: a finished trajectory polls nothing.
    assert f'data-load="{comments_url(env_task, f"?anchor=step&amp;step={step.pk}")}"' in rollout_page
    assert "hx-trigger" not in rollout_page.split('id="trajectory"')[1]
    on_step = client.get(comments_url(env_task, f"?anchor=step&step={step.pk}"), **HX).content.decode()
    assert "Comment on this step" in on_step


def test_comment_text_that_tries_to_run_script_is_inert(client, team, env_task, document):
    root = comment_add(env_task=env_task, user=team.reviewer, body=HOSTILE, anchor=CommentAnchor.DOCUMENT, document=document)
    comment_add(env_task=env_task, user=team.author, body=HOSTILE, parent=root)
    client.force_login(team.author)
    pages = [
        client.get(comments_url(env_task)),
        client.get(comments_url(env_task, f"?anchor=document&document={document.pk}"), **HX),
        client.get(comments_url(env_task, "?view=open"), **HX),
        client.post(reverse("comment-reply", args=[root.pk]), {"body": HOSTILE}, **HX),
    ]
    for response in pages:
        assert response.status_code == 200
        assert unsafe_markup(response.content.decode()) == []
    assert "&lt;script&gt;alert(" in pages[0].content.decode() and "click me" in pages[0].content.decode()


# --- Outsiders ------------------------------------------------------------------------

def test_someone_outside_the_project_gets_404_on_every_page_and_api(client, team, other_team, env_task):
    root = comment_add(env_task=env_task, user=team.reviewer, body="Private.", anchor=CommentAnchor.PROMPT)
    client.force_login(other_team.admin)
    answers = [
        client.get(comments_url(env_task)),
        client.get(comments_url(env_task, "?anchor=prompt"), **HX),
        client.get(comments_url(env_task, "?view=open"), **HX),
        client.post(comments_url(env_task), {"anchor": "prompt", "body": "Intruder."}, **HX),
        client.post(reverse("comment-reply", args=[root.pk]), {"body": "Intruder."}, **HX),
        client.post(reverse("comment-resolve", args=[root.pk]), **HX),
        client.post(reverse("comment-reopen", args=[root.pk]), **HX),
        client.get(reverse("api-task-comments", args=[env_task.pk])),
        client.post(reverse("api-task-comments", args=[env_task.pk]), {"body": "Intruder."}, content_type="application/json"),
        client.post(reverse("api-comment-reply", args=[root.pk]), {"body": "Intruder."}, content_type="application/json"),
        client.post(reverse("api-comment-resolve", args=[root.pk])),
        client.post(reverse("api-comment-reopen", args=[root.pk])),
    ]
    assert [a.status_code for a in answers] == [404] * len(answers)
    assert "Private." not in "".join(a.content.decode() for a in answers)
    assert ReviewComment.objects.count() == 1 and ReviewComment.objects.get().resolved_at is None


# --- API ------------------------------------------------------------------------------

def test_the_api_lists_adds_replies_resolves_and_reopens(client, team, env_task, document):
    client.force_login(team.reviewer)
    url = reverse("api-task-comments", args=[env_task.pk])
    criterion = criteria(env_task)[0]
    created = client.post(url, {"body": "Too vague.", "anchor": "criterion", "criterion": criterion.pk}, content_type="application/json")
    assert created.status_code == 201
    thread = created.json()
    assert (thread["anchor"], thread["criterion"], thread["criterion_text"], thread["author"]) == (
        "criterion", criterion.pk, "States fact 1", team.reviewer.username)
    quoted = client.post(url, {"body": "Currency?", "anchor": "document", "document": document.pk, "quote": "purchase price"},
                         content_type="application/json")
    assert quoted.status_code == 201 and quoted.json()["document_path"] == document.path

    client.force_login(team.author)
    reply = client.post(reverse("api-comment-reply", args=[thread["id"]]), {"body": "Sharpened."}, content_type="application/json")
    assert reply.status_code == 201 and [r["body"] for r in reply.json()["replies"]] == ["Sharpened."]
    reply_id = reply.json()["replies"][0]["id"]
    resolved = client.post(reverse("api-comment-resolve", args=[reply_id]))  # a reply resolves its thread
    assert resolved.status_code == 200 and resolved.json()["id"] == thread["id"]
    assert resolved.json()["resolved_by"] == team.author.username

    listing = client.get(url, {"open": "true"}).json()
    assert [t["body"] for t in listing["results"]] == ["Currency?"]
    on_criteria = client.get(url, {"anchor": "criterion"}).json()
    assert [t["id"] for t in on_criteria["results"]] == [thread["id"]] and on_criteria["results"][0]["resolved_at"]
    reopened = client.post(reverse("api-comment-reopen", args=[thread["id"]]))
    assert reopened.status_code == 200 and reopened.json()["resolved_at"] is None


def test_the_api_refuses_what_the_pages_refuse(client, team, env_task):
    other_task = factories.env_task(env_task.world, team.author, title="Other")
    client.force_login(team.reviewer)
    url = reverse("api-task-comments", args=[env_task.pk])
    foreign = client.post(url, {"body": "x", "anchor": "criterion", "criterion": criteria(other_task)[0].pk},
                          content_type="application/json")
    assert foreign.status_code == 400 and "There is no criterion" in foreign.json()["detail"]
    empty = client.post(url, {"body": " ", "anchor": "prompt"}, content_type="application/json")
    assert empty.status_code == 400 and empty.json()["detail"] == "Write the comment first."
    assert client.get(url, {"anchor": "teapot"}).status_code == 400
    assert client.get(url, {"resolved": "1"}).status_code == 400  # an unknown filter is never ignored
    root = comment_add(env_task=env_task, user=team.reviewer, body="Mine.", anchor=CommentAnchor.PROMPT)
    client.force_login(team.author2)
    refused = client.post(reverse("api-comment-resolve", args=[root.pk]))
    assert refused.status_code == 403
    assert not ReviewComment.objects.exclude(pk=root.pk).exists()


def test_listing_a_tasks_threads_takes_a_fixed_number_of_queries(client, team, env_task, django_assert_max_num_queries):
    for i in range(12):
        root = comment_add(env_task=env_task, user=team.reviewer, body=f"Thread {i}", anchor=CommentAnchor.PROMPT)
        comment_add(env_task=env_task, user=team.author, body=f"Reply {i}", parent=root)
    client.force_login(team.author)
    with django_assert_max_num_queries(12):
        response = client.get(comments_url(env_task, "?anchor=prompt"), **HX)
    assert len(re.findall(r"Reply \d+", text(response))) == 12
    with django_assert_max_num_queries(12):
        assert len(client.get(reverse("api-task-comments", args=[env_task.pk])).json()["results"]) == 12

