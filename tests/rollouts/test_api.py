"""Trial runs through the API: start a batch, follow its progress, list its rollouts, read
one with its steps, cancel, comment. Rollouts run in-process against the fake model server
(the start's on-commit enqueue is captured and executed by hand); refusals change nothing;
another project's batches, rollouts and steps are 404 everywhere."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from llm.models import ModelEndpoint
from rollouts.agent import rollout_execute
from rollouts.models import DEFAULT_SYSTEM_PROMPT, Rollout, RolloutBatch, RolloutStatus, Step, StepComment, StepKind
from rollouts.services import rollout_batch_start
from tests import factories
from tests.fake_llm import Reply


@pytest.fixture
def api_for(db):
    def make(user) -> APIClient:
        token, _ = Token.objects.get_or_create(user=user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


def script(fake_llm, answer: str = "The price is $12m.") -> None:
    fake_llm.script(
        Reply(
            content="Looking.",
            tool_calls=[{"name": "list_files", "arguments": {}}, {"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}],
        ),
        Reply(content=answer),
    )


def start(api, env_task, capture, body: dict):
    with capture(execute=False) as callbacks:
        response = api.post(f"/api/tasks/{env_task.pk}/batches/", body, format="json")
    return response, callbacks


def test_start_a_batch_follow_it_and_read_its_rollouts(team, env_task, endpoint, fake_llm, api_for, django_capture_on_commit_callbacks):
    api = api_for(team.author)
    response, callbacks = start(
        api, env_task, django_capture_on_commit_callbacks, {"endpoint": endpoint.pk, "n": 2, "temperature": 0.3, "max_steps": 5}
    )
    assert response.status_code == 202, response.json()
    data = response.json()
    batch = RolloutBatch.objects.get()
    assert len(callbacks) == 1
    assert data["id"] == batch.pk and data["task"] == env_task.pk and data["n"] == 2 and data["temperature"] == 0.3
    assert data["mode"] == "tools" and data["system_prompt"] == DEFAULT_SYSTEM_PROMPT and data["endpoint_is_scripted"] is False
    assert data["rubric_version"] == batch.rubric_version_id and data["task_snapshot"]["prompt"] == env_task.prompt
    assert data["progress"] == {
        "total": 2, "queued": 2, "running": 0, "completed": 0, "failed": 0, "cancelled": 0, "finished": 0, "percent": 0,
        "is_finished": False, "input_tokens": 0, "output_tokens": 0, "cost": "0.000000",
    }

    script(fake_llm)
    first = batch.rollouts.get(index=0)
    rollout_execute(rollout_id=first.pk)
    progress = api.get(f"/api/batches/{batch.pk}/").json()["progress"]
    assert (progress["completed"], progress["queued"], progress["percent"], progress["is_finished"]) == (1, 1, 50, False)
    assert progress["input_tokens"] == 200 and progress["cost"] == "0.000400"

    listed = api.get(f"/api/batches/{batch.pk}/rollouts/").json()
    assert listed["count"] == 2
    assert [(r["number"], r["status"], r["step_count"]) for r in listed["results"]] == [(1, "completed", 4), (2, "queued", 0)]
    assert listed["results"][0]["final_answer"] == "The price is $12m."
    only_queued = api.get(f"/api/batches/{batch.pk}/rollouts/", {"status": "queued"}).json()
    assert [r["number"] for r in only_queued["results"]] == [2]
    assert api.get(f"/api/batches/{batch.pk}/rollouts/", {"status": "bogus"}).status_code == 400
    assert api.get(f"/api/batches/{batch.pk}/rollouts/", {"order_by": "index"}).status_code == 400

    detail = api.get(f"/api/rollouts/{first.pk}/").json()
    assert detail["number"] == 1 and detail["status"] == "completed" and detail["reason"] == "Finished with a final answer."
    assert [(s["index"], s["kind"], s["tool_name"]) for s in detail["steps"]] == [
        (0, "model", ""), (1, "tool", "list_files"), (2, "tool", "read_file"), (3, "model", ""),
    ]
    assert detail["steps"][0]["tool_calls"][1]["arguments"] == {"path": "Deal/Doc 1.md"}
    assert detail["steps"][2]["arguments"] == {"path": "Deal/Doc 1.md"} and detail["steps"][2]["is_error"] is False
    assert detail["steps"][0]["comments"] == [] and detail["file_changes"] == []

    script(fake_llm)
    rollout_execute(rollout_id=batch.rollouts.get(index=1).pk)
    assert api.get(f"/api/batches/{batch.pk}/").json()["progress"]["is_finished"] is True
    listing = api.get(f"/api/tasks/{env_task.pk}/batches/").json()
    assert [b["id"] for b in listing["results"]] == [batch.pk]


def test_file_changes_come_with_the_rollout(team, env_task, endpoint, fake_llm, api_for, django_capture_on_commit_callbacks):
    api = api_for(team.author)
    start(api, env_task, django_capture_on_commit_callbacks, {"endpoint": endpoint.pk, "n": 1})
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "write_file", "arguments": {"path": "Work/Memo.md", "content": "# Memo\n\n$12m"}}]),
        Reply(content="Written."),
    )
    rollout = Rollout.objects.get()
    rollout_execute(rollout_id=rollout.pk)
    changes = api.get(f"/api/rollouts/{rollout.pk}/").json()["file_changes"]
    assert [(c["path"], c["action"]) for c in changes] == [("Work/Memo.md", "added")] and "+$12m" in changes[0]["diff"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"n": 65}, "n"),
        ({"n": 0}, "n"),
        ({"temperature": 2.5}, "temperature"),
        ({"mode": "sideways"}, "mode"),
        ({"max_steps": 0}, "max_steps"),
        ({"time_limit_seconds": 5}, "time_limit_seconds"),
        ({"endpoint": 999999}, "no enabled model endpoint"),
    ],
)
def test_invalid_starts_are_a_400_and_start_nothing(team, env_task, endpoint, api_for, django_capture_on_commit_callbacks, body, message):
    response, callbacks = start(
        api_for(team.author), env_task, django_capture_on_commit_callbacks, {"endpoint": endpoint.pk, "n": 2, **body}
    )
    assert response.status_code == 400 and message in str(response.json())
    assert not RolloutBatch.objects.exists() and not callbacks


def test_a_disabled_endpoint_and_a_reviewer_are_refused(team, env_task, endpoint, api_for, django_capture_on_commit_callbacks):
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    response, _ = start(api_for(team.author), env_task, django_capture_on_commit_callbacks, {"endpoint": endpoint.pk})
    assert response.status_code == 400 and "no enabled model endpoint" in response.json()["detail"]
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(enabled=True)
    response, _ = start(api_for(team.reviewer), env_task, django_capture_on_commit_callbacks, {"endpoint": endpoint.pk})
    assert response.status_code == 403 and "cannot edit content" in response.json()["detail"]
    assert not RolloutBatch.objects.exists()


def test_cancel_through_the_api(team, env_task, endpoint, api_for, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=3)
    assert api_for(team.reviewer).post(f"/api/batches/{batch.pk}/cancel/").status_code == 403
    assert batch.rollouts.filter(status=RolloutStatus.QUEUED).count() == 3
    response = api_for(team.author).post(f"/api/batches/{batch.pk}/cancel/")
    assert response.status_code == 200
    data = response.json()
    assert data["cancelled_at"] and data["progress"]["cancelled"] == 3 and data["progress"]["is_finished"] is True
    assert set(batch.rollouts.values_list("status", flat=True)) == {RolloutStatus.CANCELLED}


def test_authors_and_reviewers_comment_on_steps(team, env_task, endpoint, fake_llm, api_for, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=1)
    script(fake_llm)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    step = Step.objects.get(kind=StepKind.TOOL, tool_name="read_file")
    url = f"/api/steps/{step.pk}/comments/"
    first = api_for(team.author).post(url, {"text": "Good: it read the LOI."}, format="json")
    assert first.status_code == 201 and first.json()["author"] == team.author.username and first.json()["step"] == step.pk
    assert api_for(team.reviewer).post(url, {"text": "Agreed."}, format="json").status_code == 201
    assert api_for(team.author).post(url, {"text": "  "}, format="json").status_code == 400
    assert api_for(team.author).post(url, {}, format="json").status_code == 400
    listed = api_for(team.admin).get(url).json()
    assert [c["text"] for c in listed["results"]] == ["Good: it read the LOI.", "Agreed."]
    rollout = api_for(team.author).get(f"/api/rollouts/{step.rollout_id}/").json()
    assert [c["text"] for c in rollout["steps"][step.index]["comments"]] == ["Good: it read the LOI.", "Agreed."]
    assert StepComment.objects.count() == 2


def test_another_projects_trials_are_404_everywhere(team, other_team, endpoint, fake_llm, api_for, django_capture_on_commit_callbacks):
    world = factories.world(other_team.project, other_team.author, title="Their world")
    their_task = factories.env_task(world, other_team.author, title="Their task")
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_batch_start(env_task=their_task, user=other_team.author, endpoint=endpoint, n=1)
    script(fake_llm)
    rollout = batch.rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    step = rollout.steps.first()
    requests = [
        ("get", f"/api/tasks/{their_task.pk}/batches/", None),
        ("post", f"/api/tasks/{their_task.pk}/batches/", {"endpoint": endpoint.pk, "n": 1}),
        ("get", f"/api/batches/{batch.pk}/", None),
        ("get", f"/api/batches/{batch.pk}/rollouts/", None),
        ("post", f"/api/batches/{batch.pk}/cancel/", None),
        ("get", f"/api/rollouts/{rollout.pk}/", None),
        ("get", f"/api/steps/{step.pk}/comments/", None),
        ("post", f"/api/steps/{step.pk}/comments/", {"text": "Planted"}),
    ]
    for user in (team.author, team.reviewer, team.admin):
        api = api_for(user)
        for method, url, body in requests:
            with django_capture_on_commit_callbacks(execute=False):
                response = getattr(api, method)(url, body, format="json")
            assert response.status_code == 404, (user, method, url, response.status_code)
    assert RolloutBatch.objects.count() == 1 and batch.rollouts.get().status == RolloutStatus.COMPLETED
    assert not StepComment.objects.exists() and RolloutBatch.objects.get().cancelled_at is None
    anonymous = APIClient()
    assert anonymous.get(f"/api/batches/{batch.pk}/").status_code in (401, 403)
    assert anonymous.get("/api/batches/abc/").status_code in (401, 403)
    assert api_for(team.author).get("/api/batches/abc/").status_code == 400
