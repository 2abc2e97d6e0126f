"""Submit, the review queue, claims, release and decisions through the API."""

from authoring.models import EnvTaskStatus
from reviews.models import Review, Submission, SubmissionStatus
from reviews.services import submission_claim_next, submission_create
from tests import factories


def all_pass(project_id: int) -> list[dict]:
    return [{"item": m.item_id, "passed": True, "note": ""} for m in factories.checklist(project_id)]


def test_submit_freezes_the_task_and_queues_it(env_task, team, api_for):
    response = api_for(team.author).post(f"/api/tasks/{env_task.pk}/submit/")
    assert response.status_code == 201, response.json()
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert (submission.env_task, submission.number, submission.status, submission.submitted_by) == (
        env_task,
        1,
        SubmissionStatus.QUEUED,
        team.author,
    )
    assert body["snapshot"]["task"]["prompt"] == env_task.prompt
    assert [c["text"] for c in body["snapshot"]["rubric"]["criteria"]] == ["States fact 1", "States fact 2"]
    assert body["reviews"] == [] and body["adjudication"] is None and body["approvals_required"] == 1
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.IN_REVIEW
    assert submission.rubric_version.is_frozen


def test_submit_refuses_an_incomplete_task(world, team, api_for):
    env_task = factories.env_task(world, team.author, criteria=0)
    response = api_for(team.author).post(f"/api/tasks/{env_task.pk}/submit/")
    assert response.status_code == 400
    assert "add at least one rubric criterion" in response.json()["detail"]
    assert not Submission.objects.exists()
    assert api_for(team.reviewer).post(f"/api/tasks/{env_task.pk}/submit/").status_code == 403  # not an author


def test_submissions_list_and_detail(env_task, team, api_for):
    submission = submission_create(env_task=env_task, user=team.author)
    client = api_for(team.author2)
    listed = client.get("/api/submissions/")
    assert listed.status_code == 200
    assert [s["id"] for s in listed.json()["results"]] == [submission.pk]
    assert "snapshot" not in listed.json()["results"][0]
    assert client.get("/api/submissions/?status=queued").json()["count"] == 1
    assert client.get("/api/submissions/?status=approved").json()["count"] == 0
    assert client.get(f"/api/submissions/?project={team.project.pk}").json()["count"] == 1
    detail = client.get(f"/api/submissions/{submission.pk}/").json()
    assert detail["snapshot"] == submission.snapshot and detail["title"] == env_task.title


def test_queue_claim_release_and_request_changes(env_task, team, api_for):
    submission = submission_create(env_task=env_task, user=team.author)
    reviewer = api_for(team.reviewer)

    queue = reviewer.get("/api/review-queue/").json()
    assert [s["id"] for s in queue["results"]] == [submission.pk]
    # The author never sees their own work in a queue (and authors do not review).
    assert api_for(team.author).get("/api/review-queue/").json()["count"] == 0

    claimed = reviewer.post("/api/review-queue/claim-next/")
    assert claimed.status_code == 200
    assert claimed.json()["id"] == submission.pk and claimed.json()["claimed_by"] == team.reviewer.username
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by) == (SubmissionStatus.CLAIMED, team.reviewer)
    assert reviewer.get("/api/review-queue/").json()["count"] == 0

    # The admin (also a reviewer) finds nothing to claim: 204, no body.
    empty = api_for(team.admin).post("/api/review-queue/claim-next/")
    assert empty.status_code == 204 and empty.content == b""
    # Someone else cannot release or decide on the reviewer's claim.
    assert api_for(team.admin).post(f"/api/submissions/{submission.pk}/release/").status_code == 400
    assert (
        api_for(team.admin).post(f"/api/submissions/{submission.pk}/decision/", {"decision": "approve"}, format="json").status_code == 400
    )

    released = reviewer.post(f"/api/submissions/{submission.pk}/release/")
    assert released.status_code == 200 and released.json()["status"] == "queued"
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by) == (SubmissionStatus.QUEUED, None)

    assert reviewer.post("/api/review-queue/claim-next/").json()["id"] == submission.pk
    no_checklist = reviewer.post(f"/api/submissions/{submission.pk}/decision/", {"decision": "approve"}, format="json")
    assert no_checklist.status_code == 400 and "Answer every checklist item" in no_checklist.json()["detail"]
    no_comment = reviewer.post(f"/api/submissions/{submission.pk}/decision/",
                               {"decision": "request_changes", "checklist": all_pass(team.project.pk)}, format="json")
    assert no_comment.status_code == 400 and "Say what needs to change" in no_comment.json()["detail"]
    decided = reviewer.post(f"/api/submissions/{submission.pk}/decision/",
                            {"decision": "request_changes", "comment": "Cite the LOI.", "checklist": all_pass(team.project.pk)},
                            format="json")
    assert decided.status_code == 200, decided.json()
    assert decided.json()["status"] == "changes_requested"
    [given] = decided.json()["reviews"]
    assert given["comment"] == "Cite the LOI." and given["reviewer"] == team.reviewer.username
    assert len(given["checklist"]) == 5 and all(answer["passed"] for answer in given["checklist"])
    review = Review.objects.get(submission=submission)
    assert (review.decision, review.reviewer) == ("request_changes", team.reviewer)
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.CHANGES_REQUESTED


def test_unknown_decision_is_a_400(env_task, team, api_for):
    submission = submission_create(env_task=env_task, user=team.author)
    submission_claim_next(user=team.reviewer)
    response = api_for(team.reviewer).post(f"/api/submissions/{submission.pk}/decision/", {"decision": "maybe"}, format="json")
    assert response.status_code == 400
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.CLAIMED


def test_author_cannot_decide_on_their_own_submission(team, api_for):
    # An admin both writes and reviews: the one role that could try to approve its own work.
    world = factories.world(team.project, team.admin)
    env_task = factories.env_task(world, team.admin)
    submission = submission_create(env_task=env_task, user=team.admin)
    admin = api_for(team.admin)
    # Their own work never reaches them from the queue…
    assert admin.post("/api/review-queue/claim-next/").status_code == 204
    # …and a decision by the submitter is refused outright.
    response = admin.post(f"/api/submissions/{submission.pk}/decision/", {"decision": "approve"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "You submitted this task: someone else must review it."
    # A plain author cannot decide either.
    assert (
        api_for(team.author).post(f"/api/submissions/{submission.pk}/decision/", {"decision": "approve"}, format="json").status_code == 403
    )
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.QUEUED
    assert not Review.objects.exists()
