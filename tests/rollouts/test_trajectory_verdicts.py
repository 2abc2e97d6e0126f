"""Issue 15, the trajectory viewer: the judge's verdict on each criterion beside the steps,
with its explanation, linked to the steps it rests on (those the judge named in its answer's
"steps", and those its explanation mentions as "step 3"); and each model step's exact
request (rebuilt from the batch and the steps before it) and the provider's raw answer."""

import html
import json
import re

import pytest
from django.urls import reverse

from authoring import services as authoring_services
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.judge import SYSTEM as JUDGE_SYSTEM
from rollouts.grading.services import grade_execute
from rollouts.models import DEFAULT_SYSTEM_PROMPT, Grade, GradeStatus, StepKind, Verdict
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}
ANSWER = "The purchase price is **$12m** <script>alert(1)</script> (Deal/Doc 1.md)."


def squeeze(fragment: str) -> str:
    """The text a reader sees: inline tags dropped, others read as a space."""
    inline = re.sub(r"</?(?:a|span|strong|em|code)\b[^>]*>", "", fragment)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", inline))).strip()


def judge_reply(request) -> Reply:
    prompt = request.body["messages"][-1]["content"]
    if "Cites the data room" in prompt:  # answers as judges did before they were asked for steps: no "steps"
        return Reply(structured={"explanation": "The answer names Deal/Doc 1.md, which the agent read at step 2; step 9 does not exist.",
                                 "criteria_met": True})
    return Reply(
        structured={
            "explanation": "Steps 2 and 3: the agent read the document, then stated $12m.",
            "criteria_met": True,
            "steps": [3, 2, 40],
        }
    )


@pytest.fixture
def graded_rollout(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    doc = world.documents.get(path="Deal/Doc 1.md")
    authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="The purchase price is $12m.")
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Price", prompt="State the purchase price.",
                                                  reference_answer="$12m.")
    rubric = env_task.rubric_versions.get()
    for text in ("States the price the document gives", "Cites the data room"):
        authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text=text, points=2,
                                         grader_config={"sees": ["answer", "trajectory"]})
        rubric.refresh_from_db()
    agent = iter([
        Reply(content="Let me read it.", tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}]),
        Reply(content=ANSWER, input_tokens=300, output_tokens=80),
    ])
    fake_llm.responder = lambda request: judge_reply(request) if request.body["messages"][0]["content"] == JUDGE_SYSTEM else next(agent)
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=1)
        rollout = batch.rollouts.get()
        rollout_execute(rollout_id=rollout.pk)
    return rollout


def grade(rollout) -> None:
    for pending in Grade.objects.filter(rollout=rollout, status=GradeStatus.QUEUED):
        grade_execute(grade_id=pending.pk)


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


def test_the_trajectory_shows_each_verdict_beside_the_steps_linked_to_the_steps_it_rests_on(author_client, graded_rollout, fake_llm):
    rollout = graded_rollout
    url = reverse("rollout-detail", args=[rollout.pk])
    # Before the grade: the panel says so and reloads itself until the grade is in.
    page = author_client.get(url).content.decode()
    panel = re.search(r'<aside class="card traj-verdicts" id="rollout-verdicts"[^>]*>', page).group(0)
    assert 'hx-trigger="every 2s"' in panel and "?part=verdicts" in panel
    assert "Waiting to be graded" in squeeze(page)

    grade(rollout)
    judged = [r for r in fake_llm.requests if r.body["messages"][0]["content"] == JUDGE_SYSTEM]
    prompt = judged[0].body["messages"][-1]["content"]
    assert "[step 1, assistant] Let me read it." in prompt and "[step 2, tool read_file]" in prompt  # numbered as the page numbers them
    assert '"steps"' in json.dumps(judged[0].body["response_format"])  # the judge is asked for the steps it relied on

    read, result, final = rollout.steps.order_by("index")
    first, second = rollout.batch.rubric_version.criteria.order_by("position")
    page = author_client.get(url).content.decode()
    panel = page.split('id="rollout-verdicts"', 1)[1].split('id="trajectory"', 1)[0]
    assert "hx-trigger" not in panel.split(">", 1)[0]  # graded: it stops reloading
    assert (
        squeeze(re.search(r'<p class="traj-grade-line" id="rollout-grade">.*?</p>', panel, re.S).group(0))
        == "Graded score 1.00 4/4 pts · ✓ pass"
    )

    verdict = re.search(rf'<li class="traj-verdict traj-v-met" id="verdict-{first.pk}">.*?</li>', panel, re.S).group(0)
    assert "1. met (+2) judge States the price the document gives" in squeeze(verdict)
    assert "Steps 2 and 3: the agent read the document, then stated $12m." in squeeze(verdict)
    # Each step number in the explanation links to its step, and so does each step it rests on
    # (the judge's own list: 2 and 3; 40 is no step).
    assert (
        f'Steps <a href="#step-{result.pk}" class="traj-step-ref">2</a> and <a href="#step-{final.pk}" class="traj-step-ref">3</a>'
        in verdict
    )
    assert squeeze(re.search(r'<div class="small traj-rests-on">.*?</div>', verdict, re.S).group(0)) == "Rests on step 2, step 3"
    assert f'href="#step-{result.pk}"' in verdict and "step 40" not in verdict

    # A grade from before the judge named its steps reads as well: the steps its explanation mentions.
    old = re.search(rf'<li class="traj-verdict traj-v-met" id="verdict-{second.pk}">.*?</li>', panel, re.S).group(0)
    assert f'at step <a href="#step-{result.pk}" class="traj-step-ref">2</a>; step 9 does not exist.' in old
    assert squeeze(re.search(r'<div class="small traj-rests-on">.*?</div>', old, re.S).group(0)) == "Rests on step 2"
    assert "steps" not in Verdict.objects.get(criterion=second).samples[0]

    # The steps say which verdicts cite them, and link back.
    step_two = page.split(f'id="step-{result.pk}"', 1)[1].split("</header>", 1)[0]
    assert "Tool result read_file(path=\"Deal/Doc 1.md\") cited by criterion 1, criterion 2 at +" in squeeze(step_two)
    assert f'href="#verdict-{first.pk}"' in step_two and f'href="#verdict-{second.pk}"' in step_two
    step_one = page.split(f'id="step-{read.pk}"', 1)[1].split("</header>", 1)[0]
    assert "cited by" not in step_one

    # The panel alone, as it reloads itself.
    fragment = author_client.get(url + "?part=verdicts", **HX).content.decode()
    assert fragment.lstrip().startswith('<aside class="card traj-verdicts" id="rollout-verdicts"') and "Rests on" in fragment


def test_the_judges_explanation_is_escaped(author_client, team, graded_rollout, fake_llm):
    fake_llm.responder = lambda request: Reply(
        structured={"explanation": 'See step 2 <img src=x onerror="alert(1)">', "criteria_met": False}
    )
    grade(graded_rollout)
    page = author_client.get(reverse("rollout-detail", args=[graded_rollout.pk])).content.decode()
    assert '<img src=x' not in page and "See step" in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


def test_a_batch_without_criteria_shows_no_verdict_panel(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="No rubric", prompt="Say hi.", reference_answer="hi")
    fake_llm.responder = lambda request: Reply(content="Hi.")
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=1)
        rollout_execute(rollout_id=batch.rollouts.get().pk)
    page = author_client.get(reverse("rollout-detail", args=[batch.rollouts.get().pk])).content.decode()
    assert 'id="rollout-verdicts"' not in page and "with-verdicts" not in page


# --- A model step's request and response ----------------------------------------------------------

def test_each_model_step_shows_its_exact_request_and_raw_response(author_client, graded_rollout, fake_llm):
    rollout = graded_rollout
    read, result, final = rollout.steps.order_by("index")
    # Only the raw answer is stored per model step: the request is rebuilt.
    assert [s.kind for s in (read, result, final)] == [StepKind.MODEL, StepKind.TOOL, StepKind.MODEL]
    assert json.loads(final.raw_response)["choices"][0]["message"]["content"] == ANSWER and result.raw_response == ""

    page = author_client.get(reverse("rollout-detail", args=[rollout.pk])).content.decode()
    exchange_url = reverse("step-exchange", args=[final.pk])
    assert page.count("Show request and response") == 2  # one per model step, loaded when opened
    assert f'<details class="traj-exchange" data-load="{exchange_url}">' in page
    assert final.raw_response not in page  # not sent with the trajectory

    fragment = author_client.get(exchange_url, **HX).content.decode()
    assert fragment.lstrip().startswith(f'<div class="traj-exchange-content" id="step-{final.pk}-exchange">')
    request_json = json.loads(html.unescape(re.search(r'id="step-\d+-request"[^>]*>(.*?)</pre>', fragment, re.S).group(1)))
    sent = next(
        r.body for r in fake_llm.requests if r.body["messages"][-1].get("role") == "tool"
    )  # what the fake server received for step 3
    assert request_json == sent  # the exact request, rebuilt
    assert request_json["messages"][0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert request_json["messages"][1] == {"role": "user", "content": "State the purchase price."}
    assert request_json["messages"][-1]["role"] == "tool" and "$12m" in request_json["messages"][-1]["content"]
    assert "read_file" in [t["function"]["name"] for t in request_json["tools"]]
    assert (request_json["model"], request_json["max_tokens"]) == ("fake-model", rollout.batch.max_output_tokens)
    response_block = re.search(r'id="step-\d+-response"[^>]*>(.*?)</pre>', fragment, re.S).group(1)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response_block and "<script>" not in response_block  # escaped
    assert '\n  "choices": [' in html.unescape(response_block)  # pretty-printed
    assert json.loads(html.unescape(response_block)) == json.loads(final.raw_response)
    summary = squeeze(fragment.split("<h4", 1)[0])
    assert "Sent to fake (OpenAI-compatible chat completions) · 4 messages ·" in summary and "tools offered" in summary

    # The first step's request holds only the system and task prompts.
    first = author_client.get(reverse("step-exchange", args=[read.pk]), **HX).content.decode()
    assert "2 messages" in squeeze(first) and "no earlier step" in squeeze(first)

    # A plain GET is a page of its own; a tool step has no request.
    full = author_client.get(exchange_url).content.decode()
    assert (
        "<html" in full
        and "Request and response of step 3" in full
        and f'href="{reverse("rollout-detail", args=[rollout.pk])}#step-{final.pk}"' in full
    )
    assert author_client.get(reverse("step-exchange", args=[result.pk])).status_code == 404


def test_a_step_from_before_raw_answers_were_kept_says_so(author_client, graded_rollout):
    final = graded_rollout.steps.get(index=2)
    type(final).objects.filter(pk=final.pk).update(raw_response="")
    fragment = author_client.get(reverse("step-exchange", args=[final.pk]), **HX).content.decode()
    assert "Not kept: this step ran before Taskwright kept each model step's raw answer." in fragment


def test_the_exchange_is_behind_the_projects_access(client, other_team, graded_rollout):
    client.force_login(other_team.author)
    final = graded_rollout.steps.get(index=2)
    assert client.get(reverse("step-exchange", args=[final.pk]), **HX).status_code == 404


def test_a_streamed_answer_is_kept_in_the_shape_of_an_unstreamed_one(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    endpoint.stream = True
    endpoint.save(update_fields=["stream"])
    env_task = authoring_services.env_task_create(
        world=world, user=team.author, title="Streamed", prompt="Say the price.", reference_answer="$12m"
    )
    fake_llm.responder = lambda request: Reply(content="It is $12m.")
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=1, mode="no_tools")
        rollout_execute(rollout_id=batch.rollouts.get().pk)
    step = batch.rollouts.get().steps.get()
    assert json.loads(step.raw_response)["choices"][0]["message"]["content"] == "It is $12m."
    fragment = squeeze(author_client.get(reverse("step-exchange", args=[step.pk]), **HX).content.decode())
    assert "no tools offered · streamed" in fragment and '"stream": true' in fragment


def test_an_experts_call_shows_beside_the_judges_verdict(author_client, graded_rollout, team):
    """The expert marked a criterion the other way on the quality page; the trajectory page
    still showed only the judge's verdict, as if nobody disagreed."""
    from verification.services import expert_verdict_set

    rollout = graded_rollout
    grade(rollout)
    first, second = rollout.batch.rubric_version.criteria.order_by("position")
    expert_verdict_set(rollout=rollout, criterion=first, user=team.author, met=False, note="The $12m is the deposit, not the price.")
    expert_verdict_set(rollout=rollout, criterion=second, user=team.reviewer, met=True)
    page = author_client.get(reverse("rollout-detail", args=[rollout.pk])).content.decode()
    disagree = squeeze(re.search(rf'<div class="small traj-experts q-bad" id="verdict-{first.pk}-experts">.*?</div>', page, re.S).group(0))
    assert disagree == (f"{team.author.username} marked it not met (“The $12m is the deposit, not the price.”) "
                        "— the judge disagrees with an expert here.")
    agree = squeeze(re.search(rf'<div class="small traj-experts" id="verdict-{second.pk}-experts">.*?</div>', page, re.S).group(0))
    assert agree == f"{team.reviewer.username} marked it met."
