"""Every HTML route × method × role × project.

A user outside the project gets 404 for every object of it (never a hint that it
exists); an anonymous visitor is sent to sign in; inside the project each role gets
exactly what it may do, and a refused write changes nothing in the database. The Models
page is not project data: every signed-in user reads it, only site admins (staff) write.

The objects are built per test, but only the groups a route needs (see `Objects`), so
the matrix stays quick as routes are added.
"""

from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from accounts.models import Membership
from authoring import services as authoring_services
from authoring.models import (
    Criterion,
    Document,
    DocumentVersion,
    DraftJob,
    DraftJobStatus,
    DraftRun,
    EnvTask,
    RubricVersion,
    SkeletonProposal,
    World,
)
from authoring.services import drafting
from authoring.services.uploads import document_upload
from authoring.services.world_transfer import world_export_archive
from core.views import REFUSAL_HEADER
from llm.models import ModelEndpoint
from packs.models import Pack
from reviews import services as review_services
from reviews.models import Adjudication, ChecklistItem, ProbeExplanation, Review, ReviewComment, ReviewPolicy, Submission
from reviews.services import comments as comment_services
from rollouts.agent import rollout_execute
from rollouts.models import ExpertVerdict, Grade, ProbeAnswer, ProbeRun, Ranking, Rollout, RolloutBatch, StepComment
from rollouts.services import rollout_batch_start
from tests import factories
from verification.services import probe_run_start

ALLOWED, REFUSED, HIDDEN = "allowed", "refused", "hidden"


@dataclass(frozen=True)
class Route:
    name: str
    obj: str  # which fixture objects' pks go into the URL ("document,run" for two)
    method: str
    data: tuple = ()
    # who may: "any" member, "author" (author/admin), "review" (reviewer/admin), "admin"
    who: str = "any"
    htmx: bool = False  # a GET of a fragment: the page asks for it with HX-Request


ROUTES = [
    Route("project-detail", "project", "get"),
    Route("world-create", "project", "post", (("title", "New world"),), "author"),
    Route("world-editor", "world", "get"),
    Route("world-editor", "world", "post", (("title", "Renamed"), ("outline", "x"), ("revision", "rev:world")), "author"),
    Route("document-add", "world", "post", (("path", "new.md"), ("kind", "file"), ("target_size", "10")), "author"),
    Route("task-create", "world", "post", (("title", "New task"),), "author"),
    Route("document-editor", "document", "get"),
    Route("document-editor", "document", "post", (
        ("path", "moved.md"), ("kind", "file"), ("target_size", "5"), ("content", "x"), ("revision", "rev:document"),
    ), "author"),
    Route("document-row", "document", "get"),
    Route("document-row", "document", "post", (
        ("path", "renamed.md"), ("kind", "file"), ("target_size", "5"), ("revision", "rev:document"),
    ), "author"),
    Route("document-move", "document", "post", (("direction", "down"),), "author"),
    Route("document-delete", "document", "post", (), "author"),
    Route("document-preview", "document", "post", (("content", "x"),)),
    Route("task-editor", "task", "get"),
    Route("task-editor", "task", "post", (
        ("title", "T"), ("prompt", "P"), ("deliverable_kind", "answer"), ("revision", "rev:task"),
    ), "author"),
    Route("criterion-add", "task", "post", (("text", "New"), ("points", "2"), ("tag", "important"), ("revision", "rev:rubric")), "author"),
    Route("criterion-row", "criterion", "get"),
    Route("criterion-row", "criterion", "post", (
        ("text", "Edited"), ("points", "2"), ("tag", "important"), ("revision", "rev:rubric"),
    ), "author"),
    Route("criterion-move", "criterion", "post", (("direction", "down"), ("revision", "rev:rubric")), "author"),
    Route("criterion-delete", "criterion", "post", (("revision", "rev:rubric"),), "author"),
    Route("task-reviews", "task", "get"),
    Route("task-submit", "task2", "post", (), "author"),
    Route("task-new-version", "approved_task", "post", (), "author"),
    Route("submission-review", "submission", "get"),
    Route("submission-decide", "submission", "post", (("decision", "approve"), ("checklist", "all-pass")), "review"),
    Route("submission-release", "submission", "post", (), "review"),
    Route("submission-withdraw", "submission", "post", (), "author"),
    Route("submission-adjudicate", "disputed", "post", (("decision", "approve"), ("note", "Settled.")), "admin"),
    Route("probe-explain", "flagged_task,flagged_probe", "post", (("note", "A near miss is fine here."),), "author"),
    Route("review-settings", "project", "get", (), "admin"),
    # members: a project's admins add accounts, change roles, remove members
    Route("project-members", "project", "get", (), "admin"),
    Route("member-add", "project", "post", (("identifier", "matrix-newcomer"), ("role", "author")), "admin"),
    Route("member-update", "membership", "post", (("role", "reviewer"),), "admin"),
    Route("member-remove", "membership", "post", (), "admin"),
    Route("review-policy-update", "project", "post", (
        ("approvals_required", "2"), ("min_graded_rollouts", "8"), ("pass1_ceiling", "0.9"), ("passk_floor", "0.1"),
        ("queue_alert_threshold", "10"),
    ), "admin"),
    Route("checklist-customise", "project", "post", (), "admin"),
    Route("checklist-add", "project", "post", (("text", "A new question"),), "admin"),
    Route("checklist-item-update", "checklist_item", "post", (("text", "Reworded"),), "admin"),
    Route("checklist-item-retire", "checklist_item", "post", (), "admin"),
    # anchored QA comments: every member comments, replies, resolves and reopens
    Route("task-comments", "task", "get"),
    Route("task-comments", "task", "get", htmx=True),
    Route("task-comments", "task", "post", (("anchor", "prompt"), ("body", "Say which clause."))),
    Route("comment-reply", "comment", "post", (("body", "Clause 4.2."),)),
    Route("comment-resolve", "comment", "post", ()),
    Route("comment-reopen", "resolved_comment", "post", ()),
    # the audit trail: a task's for every member, the project's for its admins
    Route("task-audit", "task", "get"),
    Route("task-audit", "task", "get", htmx=True),
    Route("project-audit", "project", "get", (), "admin"),
    Route("pack-list", "project", "get", (), "admin"),
    Route("pack-imported", "project", "get", (), "admin"),
    Route("pack-list", "project", "post", (("name", "p"), ("submissions", "approved"), ("formats", "taskwright")), "admin"),
    Route("pack-detail", "pack", "get", (), "admin"),
    Route("pack-build-again", "finished_pack", "post", (), "admin"),
    Route("pack-progress", "pack", "get", (), "admin"),
    Route("pack-cancel", "pack", "post", (), "admin"),
    Route("pack-download", "pack", "get", (), "admin"),
    # drafting, versions, files, uploads, consistency
    Route("world-suggest-skeleton", "world", "post", (("endpoint", "endpoint"),), "author"),
    Route("world-draft-all", "world", "post", (("endpoint", "endpoint"),), "author"),
    Route("world-upload", "world", "post", (("files", "upload:Notes.md"),), "author"),
    Route("world-consistency", "world", "get", htmx=True),
    Route("skeleton-proposal", "proposal", "get", htmx=True),
    Route("skeleton-accept", "proposal", "post", (("index", "all"),), "author"),
    Route("draft-run-progress", "run", "get", htmx=True),
    Route("draft-run-cancel", "run", "post", (), "author"),
    Route("draft-job-retry", "job", "post", (), "author"),
    Route("document-draft", "document", "post", (("endpoint", "endpoint"), ("instruction", "Shorter.")), "author"),
    Route("document-draft-status", "drafted,run", "get", htmx=True),
    Route("document-versions", "drafted", "get"),
    Route("document-download", "drafted", "get"),
    Route("document-source-download", "uploaded", "get"),
    Route("document-version-restore", "version", "post", (("revision", "rev:drafted"),), "author"),
    # deleting a task or a world with no history: the page asks first
    Route("task-delete", "task2", "get", (), "author"),
    Route("task-delete", "task2", "post", (), "author"),
    Route("world-delete", "full_world", "get", (), "author"),
    Route("world-delete", "full_world", "post", (), "author"),
    # world export / import (APEX-Agents layout)
    Route("world-export", "full_world", "get", (), "author"),
    Route("world-import", "project", "post", (("archive", "worldzip:full_world"),), "author"),
    # trial runs: the task page's panel, batches, trajectories, comments, criteria from steps
    Route("task-trials", "task", "get", htmx=True),
    Route("task-trials", "task", "post", (
        ("endpoint", "trial_endpoint"), ("n", "1"), ("mode", "tools"), ("temperature", ""), ("max_steps", "5"),
        ("max_output_tokens", "1000"), ("time_limit_seconds", "60"), ("system_prompt", "Be brief."),
    ), "author"),
    Route("batch-detail", "batch", "get"),
    Route("batch-detail", "batch", "get", htmx=True),
    Route("batch-cancel", "batch", "post", (), "author"),
    Route("batch-compare", "batch", "get"),
    Route("rollout-detail", "rollout", "get"),
    Route("rollout-detail", "rollout", "get", htmx=True),
    Route("rollout-steps", "rollout", "get", htmx=True),
    Route("step-comment-add", "step", "post", (("text", "Noted."),)),
    Route("step-criterion", "step", "get"),
    Route("step-criterion", "step", "post", (
        ("text", "From a step"), ("points", "1"), ("tag", "important"), ("revision", "rev:rubric"),
    ), "author"),
    # verifier quality: the task page's Verifier panel and the batch quality page. Every member reads them;
    # authors and reviewers ("any" role here) set expert verdicts and rankings; only authors change the
    # rubric's grading settings, run probes (they spend model calls) and regrade.
    Route("task-verifier", "task", "get"),
    Route("task-verifier", "task", "get", htmx=True),
    Route("task-judge-prompt", "task", "get", htmx=True),
    Route("task-probes", "task", "get", htmx=True),
    Route("task-probes", "task", "post", (("judge_endpoint", "trial_endpoint"),), "author"),
    Route("task-rubric-settings", "task", "post", (
        ("pass_threshold", "0.5"), ("judge_samples", "3"), ("revision", "rev:rubric"),
    ), "author"),
    Route("batch-quality", "verifier_batch", "get"),
    Route("batch-quality", "verifier_batch", "get", htmx=True),
    Route("batch-expert-verdict", "verifier_batch", "post", (
        ("rollout", "ranked"), ("criterion", "judged_criterion"), ("verdict", "not_met"),
    )),
    Route("batch-ranking", "verifier_batch", "post", (("order", "ranked"),)),
    Route("batch-regrade", "verifier_batch", "post", (), "author"),
    Route("batch-grading-cancel", "verifier_batch", "post", (("rubric", "1"),), "author"),
    Route("task-probes-cancel", "probed_task", "post", (), "author"),
]
# Refusals that come back as a message on a redirect rather than a 403 fragment.
REFUSED_BY_REDIRECT = {"task-submit", "submission-release", "submission-withdraw", "world-upload", "document-version-restore",
                       "world-export", "world-import"}
ROLES = ["author", "reviewer", "admin"]
MAY = {"any": set(ROLES), "author": {"author", "admin"}, "review": {"reviewer", "admin"}, "admin": {"admin"}}


def fingerprint() -> tuple:
    """Everything a write could touch, summed up."""
    return (
        list(World.objects.values_list("pk", "revision", "title")),
        list(Document.objects.values_list("pk", "revision", "position", "path")),
        list(EnvTask.objects.values_list("pk", "revision", "status")),
        list(RubricVersion.objects.values_list("pk", "revision")),
        list(Criterion.objects.values_list("pk", "position", "text")),
        list(Submission.objects.values_list("pk", "status", "claimed_by")),
        Review.objects.count(),
        Adjudication.objects.count(),
        list(ReviewComment.objects.values_list("pk", "resolved_at")),
        ProbeExplanation.objects.count(),
        list(ReviewPolicy.objects.values_list("pk", "approvals_required")),
        list(ChecklistItem.objects.values_list("pk", "text", "active")),
        list(Pack.objects.values_list("pk", "status")),
        DocumentVersion.objects.count(),
        list(DraftRun.objects.values_list("pk", "cancelled_at")),
        list(DraftJob.objects.values_list("pk", "status")),
        list(SkeletonProposal.objects.values_list("pk", "status", "items")),
        list(ModelEndpoint.objects.values_list("pk", "name", "kind", "enabled")),
        list(RolloutBatch.objects.values_list("pk", "cancelled_at")),
        list(Rollout.objects.values_list("pk", "status")),
        StepComment.objects.count(),
        list(Grade.objects.values_list("pk", "rubric_version", "status")),
        list(ExpertVerdict.objects.values_list("pk", "met")),
        list(Ranking.objects.values_list("pk", "order")),
        ProbeRun.objects.count(),
        list(Membership.objects.values_list("pk", "role")),
    )


def _base(team, o: dict) -> None:
    world = factories.world(team.project, team.author)
    task = factories.env_task(world, team.author)
    o.update(
        project=team.project, world=world, document=world.documents.first(), task=task,
        task2=factories.env_task(world, team.author, title="Second"), criterion=task.rubric_versions.get().criteria.first(),
        membership=Membership.objects.get(user=team.author2),
    )
    factories.user("matrix-newcomer")  # an account that is no member yet, for the admin to add


def _review(team, o: dict) -> None:
    approved = factories.env_task(o["world"], team.author, title="Approved one")
    sub_approved = review_services.submission_create(env_task=approved, user=team.author)
    review_services.submission_claim_next(user=team.admin)
    review_services.review_decide(submission=sub_approved, user=team.admin, decision="approve",
        checklist=factories.checklist(sub_approved.project_id))
    in_review = factories.env_task(o["world"], team.author2, title="In review")
    submission = review_services.submission_create(env_task=in_review, user=team.author2)
    Submission.objects.filter(pk=submission.pk).update(status="claimed", claimed_by=None)
    pack = Pack.objects.create(project=team.project, name="p", version=1, created_by=team.admin)
    pack.submissions.add(sub_approved)
    # A pack whose build has finished (failed): Build again waits for a version still being built.
    finished_pack = Pack.objects.create(project=team.project, name="q", version=1, created_by=team.admin, status="failed",
                                        error="A document could not be rendered.")
    finished_pack.submissions.add(sub_approved)
    # Two reviewers disagreed on this one (the rows their reviews leave): an admin settles it.
    disputed_task = factories.env_task(o["world"], team.author2, title="Disputed")
    disputed = review_services.submission_create(env_task=disputed_task, user=team.author2)
    Submission.objects.filter(pk=disputed.pk).update(status="adjudication")
    # A probe that passed the rubric (flagged), on a task still being written.
    flagged_task = factories.env_task(o["world"], team.author, title="Probed")
    rubric = flagged_task.rubric_versions.get()
    run = ProbeRun.objects.create(env_task=flagged_task, rubric_version=rubric, created_by=team.author)
    flagged_probe = ProbeAnswer.objects.create(run=run, kind="keyword_echo", label="Keyword echo", answer="price price price")
    Grade.objects.create(probe=flagged_probe, rubric_version=rubric, status="graded", passed=True, score=1.0)
    comment = comment_services.comment_add(env_task=o["task"], user=team.reviewer, body="Which clause?", anchor="prompt")
    resolved_comment = comment_services.comment_add(env_task=o["task"], user=team.reviewer, body="Fixed?", anchor="task")
    comment_services.comment_resolve(comment=resolved_comment, user=team.author)
    o.update(comment=comment, resolved_comment=resolved_comment)
    o.update(submission=submission, pack=pack, finished_pack=finished_pack, approved=sub_approved, approved_task=approved,
             disputed=disputed, flagged_task=flagged_task, flagged_probe=flagged_probe,
             checklist_item=ChecklistItem.objects.filter(project=team.project).first())


def _drafting(team, o: dict) -> None:
    """A scripted endpoint (no network: queued work never runs in these tests anyway);
    a document with two versions; a run whose job on it failed and whose other job is
    still queued; a ready skeleton proposal; an uploaded document."""
    world, author = o["world"], team.author
    endpoint = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    drafted = authoring_services.document_create(world=world, user=author, path="Deal/Drafted.md", content="First version.")
    drafted = authoring_services.document_update(document=drafted, user=author, base_revision=drafted.revision, content="Second version.")
    queued = authoring_services.document_create(world=world, user=author, path="Deal/Queued.md")
    run = drafting.draft_run_start(world=world, user=author, endpoint=endpoint, documents=[drafted, queued])
    job = run.jobs.get(document=drafted)
    DraftJob.objects.filter(pk=job.pk).update(status=DraftJobStatus.FAILED, error="The model was down.")
    proposal = drafting.skeleton_suggest(world=world, user=author, endpoint=endpoint)
    SkeletonProposal.objects.filter(pk=proposal.pk).update(status="ready", items=[
        {"path": "Deal/Proposed.md", "kind": "file", "format": "md", "brief": "b", "metadata": {}, "target_size": 50,
         "accepted": False, "problem": ""},
    ])
    uploaded = document_upload(world=world, user=author, uploaded_file=SimpleUploadedFile("Minutes.md", b"# Minutes\n\nAgreed.\n"))
    o.update(
        endpoint=endpoint, drafted=drafted, version=drafted.versions.get(number=1), run=run, job=job, proposal=proposal,
        uploaded=uploaded,
    )


def _transfer(team, o: dict) -> None:
    """A world that can be exported: its one document has content."""
    world = factories.world(team.project, team.author, title="Exportable", documents=0)
    authoring_services.document_create(world=world, user=team.author, path="Deal/Terms.md", content="# Terms\n\nThe price is $12m.")
    o.update(full_world=world)


def _rollouts(team, o: dict) -> None:
    """A batch of two on the task, on a scripted endpoint: rollout 1 run to its end by the
    agent in-process (the scripted model needs no network), rollout 2 still queued (its
    enqueue waits for a commit that never comes in these tests)."""
    endpoint = ModelEndpoint.objects.create(name="Sample trials", kind="scripted")
    batch = rollout_batch_start(env_task=o["task"], user=team.author, endpoint=endpoint, n=2)
    rollout = batch.rollouts.get(index=0)
    rollout_execute(rollout_id=rollout.pk)
    o.update(trial_endpoint=endpoint, batch=batch, rollout=rollout, step=rollout.steps.order_by("index").first())


def _quality(team, o: dict) -> None:
    """The trial batch once the rubric moved on: a criterion added after it (rubric version 2), so a
    regrade has something to grade; its completed rollout is the one to rank and judge."""
    batch, task = o["batch"], o["task"]
    rubric = task.rubric_versions.order_by("-number").first()
    authoring_services.criterion_add(
        env_task=task, user=team.author, base_revision=rubric.revision, text="Added after the trials", points=1
    )
    o.update(verifier_batch=batch, judged_criterion=batch.rubric_version.criteria.first(), ranked=o["rollout"])


def _probes(team, o: dict) -> None:
    """A probe run on the task whose grades are still queued (their enqueue waits for a commit)."""
    endpoint = ModelEndpoint.objects.create(name="Sample judge", kind="scripted")
    probe_run_start(env_task=o["task"], user=team.author, judge_endpoint=endpoint)
    o.update(probed_task=o["task"])


# name → the group that builds it (each group after the ones it builds on)
GROUPS = {"base": _base, "review": _review, "drafting": _drafting, "transfer": _transfer, "rollouts": _rollouts, "quality": _quality,
          "probes": _probes}
BUILT_BY = {
    **dict.fromkeys(("project", "world", "document", "task", "task2", "criterion", "membership"), "base"),
    **dict.fromkeys(("submission", "pack", "finished_pack", "approved", "approved_task", "disputed", "flagged_task", "flagged_probe",
                      "checklist_item", "comment", "resolved_comment"), "review"),
    **dict.fromkeys(("endpoint", "drafted", "version", "run", "job", "proposal", "uploaded"), "drafting"),
    "full_world": "transfer",
    **dict.fromkeys(("trial_endpoint", "batch", "rollout", "step"), "rollouts"),
    **dict.fromkeys(("verifier_batch", "judged_criterion", "ranked"), "quality"),
    "probed_task": "probes",
}


class Objects(dict):
    """The test's objects, each group built the first time one of its names is used."""

    def __init__(self, team) -> None:
        super().__init__()
        self.team = team

    def __missing__(self, name: str):
        group = BUILT_BY[name]
        if group != "base" and "project" not in self:
            _base(self.team, self)
        GROUPS[group](self.team, self)
        return self[name]

    def prepare(self, route: Route) -> None:
        """Build everything the route names before the test takes its fingerprint."""
        for name in [*route.obj.split(","), *(v.removeprefix("rev:").removeprefix("worldzip:") for _, v in route.data)]:
            if name in BUILT_BY:
                self[name]  # builds its group


@pytest.fixture
def objects(team, db, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # uploads write their originals
    return Objects(team)


def request(client, route: Route, objects: dict, user=None):
    url = reverse(route.name, args=[objects[name].pk for name in route.obj.split(",")])
    if route.method == "get":
        return client.get(url, **({"HTTP_HX_REQUEST": "true"} if route.htmx else {}))
    data = {k: _value(v, objects) for k, v in route.data if k != "checklist"}
    if ("checklist", "all-pass") in route.data:  # a reviewer's answer to every checklist item
        data |= {f"check-{mark.item_id}": "pass" for mark in factories.checklist(objects["project"].pk)}
    return client.post(url, data, HTTP_HX_REQUEST="true")


def _value(value: str, objects: dict) -> str:
    """Object names become their pk; "rev:<name>" becomes the revision stored now, as a
    page that was just loaded would send it; "upload:<name>" becomes a small file."""
    if value in BUILT_BY:
        return str(objects[value].pk)
    if value.startswith("upload:"):
        return SimpleUploadedFile(value[7:], b"# Notes\n\nThe price is $12m.\n")
    if value.startswith("worldzip:"):
        with world_export_archive(world=objects[value[9:]]) as archive:
            return SimpleUploadedFile("world.zip", archive.read(), content_type="application/zip")
    if value.startswith("rev:"):
        name = value[4:]
        if name == "rubric":
            return str(objects["task"].rubric_versions.order_by("-number").first().revision)
        obj = objects[name]
        obj.refresh_from_db(fields=["revision"])
        return str(obj.revision)
    return value


def claim_for(user, objects):
    """Decide/release need the acting reviewer to hold the claim."""
    Submission.objects.filter(pk=objects["submission"].pk).update(claimed_by=user)


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_outsiders_get_404_and_change_nothing(client, other_team, objects, route):
    objects.prepare(route)
    for user in (other_team.author, other_team.reviewer, other_team.admin):
        client.force_login(user)
        before = fingerprint()
        assert request(client, route, objects).status_code == 404, user
        assert fingerprint() == before


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_anonymous_is_sent_to_sign_in(client, objects, route):
    objects.prepare(route)
    before = fingerprint()
    response = request(client, route, objects)
    assert fingerprint() == before
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method.upper()} {r.name}")
def test_each_role_gets_what_it_may(client, team, objects, route, role):
    user = getattr(team, role)
    objects.prepare(route)
    if route.name in ("submission-decide", "submission-release"):
        claim_for(user, objects)
    client.force_login(user)
    before = fingerprint()
    response = request(client, route, objects)
    may = role in MAY[route.who]
    if may:
        assert response.status_code in ((200,) if route.htmx else (200, 302)), (response.status_code, response.content[:300])
        if route.method == "post" and route.name != "document-preview":
            assert fingerprint() != before
    else:
        # admin-only pages are hidden (404); other refusals answer 403 with the fragment
        # that says why (marked, so htmx swaps it), or come back as a message on the redirect.
        assert response.status_code in (404, 403, 302)
        if response.status_code == 403:
            assert response[REFUSAL_HEADER] and 'role="alert"' in response.content.decode()
        if response.status_code == 302:
            assert route.name in REFUSED_BY_REDIRECT
        assert fingerprint() == before


# --- The Models page: site-wide, not project data ---------------------------------------

ENDPOINT_FORM = {
    "name": "Added", "kind": "scripted", "base_url": "", "model": "", "api_key_env": "", "max_concurrency": "4",
    "connect_timeout": "10", "read_timeout": "120", "max_retries": "4", "price_input_per_mtok": "0",
    "price_output_per_mtok": "0", "enabled": "on",
}
MODEL_ROUTES = [("model-endpoints", "get"), ("model-endpoints", "post"), ("model-endpoint-edit", "get"), ("model-endpoint-edit", "post")]


@pytest.mark.parametrize("who", ["anonymous", "outsider", "author", "reviewer", "admin", "staff"])
@pytest.mark.parametrize(("name", "method"), MODEL_ROUTES, ids=[f"{m.upper()} {n}" for n, m in MODEL_ROUTES])
def test_models_page_every_user_reads_only_staff_write(client, team, name, method, who):
    endpoint = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    if who == "staff":
        user = factories.user()
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    elif who == "outsider":
        user = factories.user()  # a member of no project: the page is not project data
    elif who != "anonymous":
        user = getattr(team, who)
    if who != "anonymous":
        client.force_login(user)
    url = reverse(name, args=[endpoint.pk] if name == "model-endpoint-edit" else [])
    before = fingerprint()
    response = client.get(url) if method == "get" else client.post(url, {**ENDPOINT_FORM, "name": f"{name} by {who}"})
    if who == "anonymous":
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
        assert fingerprint() == before
    elif method == "get":
        assert response.status_code == 200 and "Sample" in response.content.decode()
    elif who == "staff":
        assert response.status_code == 302 and ModelEndpoint.objects.filter(name=f"{name} by {who}").exists()
        if name == "model-endpoint-edit":
            assert not ModelEndpoint.objects.filter(name="Sample").exists()  # renamed, not added
    else:  # refused: 403, the page with the reason, nothing saved
        assert response.status_code == 403 and "Only a site admin can configure model endpoints." in response.content.decode()
        assert fingerprint() == before
