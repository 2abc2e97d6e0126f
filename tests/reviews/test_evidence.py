"""The evidence a reviewer decides on (reviews.selectors.evidence), what changed since the
previous version (reviews.selectors.diff), and both on the review page. Trial batches and
their grades are written as rows (the grading itself is tested in tests/grading)."""

import math
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.http import Http404
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from authoring import services as authoring_services
from authoring.models import Criterion
from authoring.selectors import rubric_version_current
from reviews import services
from reviews.models import ProbeExplanation
from reviews.selectors.diff import _criteria_changes, submission_diff, text_diff
from reviews.selectors.evidence import document_view, submission_evidence
from rollouts.models import ExpertVerdict, Grade, GradeStatus, ProbeAnswer, ProbeRun, Ranking, Rollout, RolloutBatch, RolloutStatus, Verdict
from tests import factories

# A spreadsheet as the content format writes it: formulas and a Formats line (docs/content-format.md).
CAP_TABLE = ("## Sheet: Cap table\n\n|   | A | B |\n|---|---|---|\n| 1 | Holder | Shares |\n| 2 | Founders | 6000000 |\n"
             "| 3 | Investors | 4000000 |\n| 4 | Total | =SUM(B2:B3) |\n| 5 | Founders' share | =B2/B4 |\n\n"
             "Formats: B2:B4 #,##0; B5 0.0%\n")
SCRIPT = "<script>alert(1)</script>"


def graded_batch(env_task, scores: list[float], *, failed_runs: int = 0) -> RolloutBatch:
    """A batch of the task on its current rubric version with these graded scores (pass at the
    rubric's threshold), every criterion met by a passing rollout, plus rollouts that failed to run."""
    rubric = rubric_version_current(env_task=env_task)
    authoring_services.rubric_version_freeze(rubric_version=rubric)  # grading freezes a rubric version
    criteria = list(rubric.criteria.all())
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
                                        task_snapshot={"title": env_task.title}, endpoint_name="fake-model", n=len(scores) + failed_runs)
    for i, score in enumerate(scores):
        rollout = Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.COMPLETED, final_answer=f"Answer {i + 1}")
        passed = score >= rubric.pass_threshold
        grade = Grade.objects.create(rollout=rollout, rubric_version=rubric, status=GradeStatus.GRADED, score=score, passed=passed)
        Verdict.objects.bulk_create(Verdict(grade=grade, criterion=c, met=passed) for c in criteria)
    for i in range(len(scores), len(scores) + failed_runs):
        Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.FAILED, reason="The model endpoint timed out.")
    return batch


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al.'s estimator written out with binomials (independent of verification.metrics)."""
    return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)


@pytest.fixture
def reviewer_client(client, team):
    client.force_login(team.reviewer)
    return client


# --- The evidence ----------------------------------------------------------------------------------

def test_trials_pass_rate_pass_at_k_band_histogram_and_every_trajectory(team, env_task):
    batch = graded_batch(env_task, [1.0, 0.9, 0.5, 0.2, 0.0], failed_runs=1)
    submission = services.submission_create(env_task=env_task, user=team.author, note="Rollout 3 hedges; the rubric catches it.")
    trials = submission_evidence(submission=submission, user=team.reviewer)["trials"]

    assert trials["batch"] == batch
    assert (trials["graded"], trials["passed"]) == (5, 2) and trials["pass_rate_label"] == "40%"
    assert trials["mean_score"] == pytest.approx(0.52)
    # A rollout that failed to run counts as an attempt that did not pass: n = 6, c = 2.
    assert trials["difficulty"]["n"] == 6 and trials["difficulty"]["c"] == 2
    assert trials["pass1"] == pytest.approx(pass_at_k(6, 2, 1))
    assert trials["top_k"][0] == 4 and trials["top_k"][1] == pytest.approx(pass_at_k(6, 2, 4))
    assert trials["band"] == "learnable"
    assert trials["histogram"]["counts"] == [1, 0, 1, 0, 0, 1, 0, 0, 0, 2]
    assert [r["number"] for r in trials["trajectories"]] == [1, 2, 3, 4, 5, 6]
    rollouts = list(batch.rollouts.order_by("index"))
    assert [r["url"] for r in trials["trajectories"]] == [reverse("rollout-detail", args=[r.pk]) for r in rollouts]
    assert [r["grade_label"] for r in trials["trajectories"]] == ["passed", "passed", "failed", "failed", "failed", ""]
    assert trials["batch_url"] == reverse("batch-detail", args=[batch.pk])


def test_trials_on_another_rubric_version_are_not_evidence(team, env_task):
    graded_batch(env_task, [1.0, 0.0])
    rubric = rubric_version_current(env_task=env_task)
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Cites the LOI", points=2)
    submission = services.submission_create(env_task=env_task, user=team.author)
    assert submission.rubric_version.number == 2
    trials = submission_evidence(submission=submission, user=team.reviewer)["trials"]
    assert trials["batch"] is None and trials["other_batches"] == 1


def test_the_evidence_costs_the_same_queries_for_a_small_and_a_large_batch(team, world):
    def count(n: int) -> int:
        task = factories.env_task(world, team.author, title=f"Task of {n}", criteria=2 if n < 10 else 4)
        batch = graded_batch(task, [i / n for i in range(n)])
        Ranking.objects.create(batch=batch, expert=team.author, order=list(batch.rollouts.values_list("pk", flat=True)))
        submission = services.submission_create(env_task=task, user=team.author)
        with CaptureQueriesContext(connection) as queries:
            submission_evidence(submission=submission, user=team.reviewer)
        return len(queries)

    assert count(3) == count(24)


def test_flagged_probes_with_the_criteria_they_fooled_and_the_authors_explanation(team, env_task):
    graded_batch(env_task, [1.0, 0.0])
    submission = services.submission_create(env_task=env_task, user=team.author)
    rubric = submission.rubric_version
    first, second = rubric.criteria.all()
    run = ProbeRun.objects.create(env_task=env_task, rubric_version=rubric, flag_score=0.5)

    def probe(kind: str, label: str, score: float, met: list) -> ProbeAnswer:
        answer = ProbeAnswer.objects.create(run=run, kind=kind, label=label, answer=f"{label}: the price is $12m, or maybe $15m.")
        grade = Grade.objects.create(probe=answer, rubric_version=rubric, status=GradeStatus.GRADED, score=score, passed=score >= 0.7)
        Verdict.objects.bulk_create(Verdict(grade=grade, criterion=c, met=c in met) for c in (first, second))
        return answer

    probe("reference", "Reference answer", 1.0, [first, second])
    hedge = probe("hedging", "Hedge", 0.6, [first])
    probe("unsupported", "Bare conclusion", 0.8, [first, second])
    probe("claims_done", "Claims done", 0.0, [])
    ProbeExplanation.objects.create(probe=hedge, author=team.author, note="Hedging is *penalised* by criterion 2 in practice.")

    probes = submission_evidence(submission=submission, user=team.reviewer)["probes"]
    assert probes["state"] == "flagged" and probes["label"] == "2 probes flagged"
    assert [f["label"] for f in probes["flagged"]] == ["Hedge", "Bare conclusion"]
    assert [c["text"] for c in probes["flagged"][0]["fooled"]] == ["States fact 1"]
    assert [c["text"] for c in probes["flagged"][1]["fooled"]] == ["States fact 1", "States fact 2"]
    assert probes["flagged"][0]["explanation"].note.startswith("Hedging is")
    assert probes["flagged"][1]["explanation"] is None and probes["unexplained"] == 1


def test_no_probes_on_the_submitted_rubric(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    probes = submission_evidence(submission=submission, user=team.reviewer)["probes"]
    assert probes["state"] == "none" and probes["run"] is None and probes["other_rubric_number"] is None


def test_judge_vs_expert_and_the_authors_ranking(team, env_task):
    batch = graded_batch(env_task, [0.9, 0.8, 0.3, 0.1])
    rollouts = list(batch.rollouts.order_by("index"))
    first = rubric_version_current(env_task=env_task).criteria.first()
    # The judge said rollout 1 met criterion 1; the author says it did not: one false positive.
    ExpertVerdict.objects.create(rollout=rollouts[0], criterion=first, expert=team.author, met=False)
    # The author ranks the trajectories exactly as the scores do, except the last two swapped.
    Ranking.objects.create(batch=batch, expert=team.author, order=[rollouts[0].pk, rollouts[1].pk, rollouts[3].pk, rollouts[2].pk])
    submission = services.submission_create(env_task=env_task, user=team.author)

    agreement = submission_evidence(submission=submission, user=team.reviewer)["agreement"]
    assert agreement["marked"] and agreement["expert_marks"] == 1
    row = agreement["rows"][0]
    assert row["criterion"].text == "States fact 1" and row["fp"] == 1 and row["fn"] == 0
    (ranking,) = agreement["rankings"]
    assert ranking["expert"] == team.author and ranking["ranked"] == 4
    # 6 pairs, 5 concordant and 1 discordant: tau = 4/6; rho = 1 - 6·(0+0+1+1)/(4·15) = 0.8
    assert ranking["tau"] == pytest.approx(4 / 6) and ranking["rho"] == pytest.approx(0.8)


def test_earlier_reviews_with_their_checklist_answers(team, env_task):
    first = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.review_decide(submission=first, user=team.reviewer, decision="request_changes", comment="Criterion 2 is vague.",
                           checklist=factories.checklist(team.project.pk, fail=(2,)))
    env_task.refresh_from_db()
    second = services.submission_create(env_task=env_task, user=team.author)

    assert submission_evidence(submission=first, user=team.reviewer)["earlier"] == []
    (earlier,) = submission_evidence(submission=second, user=team.reviewer)["earlier"]
    assert earlier["submission"] == first and earlier["adjudication"] is None
    (review,) = earlier["reviews"]
    assert review.comment == "Criterion 2 is vague."
    assert [a.passed for a in review.answers.all()] == [True, True, False, True, True]


def test_a_user_of_another_project_gets_a_404(team, other_team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    with pytest.raises(Http404):
        submission_evidence(submission=submission, user=other_team.reviewer)


# --- Documents as the apps show them ------------------------------------------------------------------

def test_a_spreadsheet_shows_its_computed_values_in_their_formats():
    view = document_view({"path": "Deal/Cap table.xlsx", "kind": "file", "format": "xlsx", "content": CAP_TABLE, "metadata": {}})
    html = str(view["preview"])
    assert "10,000,000" in html and "60.0%" in html and "6,000,000" in html
    assert "Formats:" not in html and "| 4 | Total |" not in html and "#,##0" not in html
    # A formula is not the cell's text; it is in the cell's tooltip, as a spreadsheet shows it when the cell is selected.
    assert "<code>" not in html and "→" not in html
    assert '<td align="right" title="=SUM(B2:B3)">10,000,000</td>' in html
    assert view["type"] == "Spreadsheet"


def test_a_formula_in_a_tooltip_cannot_break_out_of_it():
    content = '## Sheet: S\n\n|   | A | B |\n|---|---|---|\n| 1 | 5 | =IF(A1>3,"x"" onmouseover=""alert(1)","y") |\n'
    html = str(document_view({"path": "S.xlsx", "kind": "file", "format": "xlsx", "content": content, "metadata": {}})["preview"])
    attributes = []

    class Cells(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            attributes.extend(name for name, _ in attrs)

    Cells().feed(html)
    assert 'title="=IF(A1&gt;3,&quot;x&quot;&quot; onmouseover=' in html
    assert "title" in attributes and not [name for name in attributes if name.startswith("on")]


# --- What changed since the previous version ---------------------------------------------------------

@pytest.fixture
def two_versions(team, world, env_task):
    """v1 sent back; v2 with a prompt word changed (and a script in it), criterion 1's points
    changed, a spreadsheet added and a document rewritten."""
    doc = world.documents.get(path="Deal/Doc 1.md")
    doc = authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision,
                                             content="# Letter of intent\n\nPrice: $12m.\nClosing: March.\n")
    first = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.review_decide(submission=first, user=team.reviewer, decision="request_changes", comment="Say which price.",
                           checklist=factories.checklist(team.project.pk))
    env_task.refresh_from_db()
    authoring_services.env_task_update(env_task=env_task, user=team.author, base_revision=env_task.revision, title=env_task.title,
                                       prompt=f"Read the data room and state the sale price. {SCRIPT}",
                                       deliverable_kind=env_task.deliverable_kind, reference_answer=env_task.reference_answer)
    criterion = rubric_version_current(env_task=env_task).criteria.get(text="States fact 1")
    rubric = rubric_version_current(env_task=env_task)
    authoring_services.criterion_update(criterion=criterion, user=team.author, base_revision=rubric.revision, text=criterion.text,
                                        points=3, tag=criterion.tag)
    authoring_services.document_create(world=world, user=team.author, path="Deal/Cap table.xlsx", content=CAP_TABLE)
    doc.refresh_from_db()
    authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision,
                                       content="# Letter of intent\n\nPrice: $12m.\nClosing: 31 March 2026.\n")
    second = services.submission_create(env_task=env_task, user=team.author)
    return first, second


def test_the_diff_names_every_change(two_versions):
    first, second = two_versions
    diff = submission_diff(previous=first, current=second)
    assert (diff["previous_number"], diff["current_number"]) == (1, 2) and not diff["nothing_changed"]

    (prompt,) = diff["fields"]
    assert prompt["key"] == "prompt"
    assert ("del", "purchase") in prompt["diff"]["segments"] and ("ins", "sale") in prompt["diff"]["segments"]

    criteria = diff["criteria"]
    (changed,) = criteria["changed"]
    assert changed["points_changed"] and (changed["old"]["points"], changed["new"]["points"]) == (5, 3)
    assert changed["text"] is None and criteria["added"] == [] and criteria["removed"] == [] and criteria["unchanged"] == 1

    documents = diff["documents"]
    assert [d["path"] for d in documents["added"]] == ["Deal/Cap table.xlsx"]
    assert documents["removed"] == [] and documents["unchanged"] == 1
    (rewritten,) = documents["changed"]
    assert rewritten["path"] == "Deal/Doc 1.md"
    assert ("del", "Closing: March.") in rewritten["lines"] and ("add", "Closing: 31 March 2026.") in rewritten["lines"]


def test_input_files_added_removed_and_replaced_are_in_the_diff_and_on_the_page(reviewer_client, team, env_task, settings,
                                                                                 tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from authoring.services.task_files import task_input_file_add_bytes, task_input_file_remove, task_input_files_add

    settings.MEDIA_ROOT = tmp_path / "media"
    task_input_file_add_bytes(env_task=env_task, user=team.author, path="Inputs/figures.csv", data=b"q,revenue\nQ1,120\n")
    task_input_file_add_bytes(env_task=env_task, user=team.author, path="Inputs/old.md", data=b"Old notes.")
    first = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.review_decide(submission=first, user=team.reviewer, decision="request_changes", comment="Update the figures.",
                           checklist=factories.checklist(team.project.pk))
    env_task.refresh_from_db()
    task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[SimpleUploadedFile("figures.csv", b"q,revenue\nQ1,125\n")],
                         folder="Inputs", replace=True)
    task_input_file_remove(input_file=env_task.input_files.get(path="Inputs/old.md"), user=team.author)
    task_input_file_add_bytes(env_task=env_task, user=team.author, path="Inputs/new.md", data=b"New notes.")
    second = services.submission_create(env_task=env_task, user=team.author)
    changes = submission_diff(previous=first, current=second)["input_files"]
    assert [f["path"] for f in changes["added"]] == ["Inputs/new.md"] and [f["path"] for f in changes["removed"]] == ["Inputs/old.md"]
    assert [f["path"] for f in changes["changed"]] == ["Inputs/figures.csv"]
    page = reviewer_client.get(reverse("submission-review", args=[second.pk])).content.decode()
    assert 'id="evidence-diff-input-files"' in page and "Inputs/new.md" in page and "Inputs/figures.csv" in page


def test_criteria_are_paired_added_removed_and_changed_in_text_points_or_tag():
    def criterion(pk: int, position: int, text: str, points: int, tag: str = "important") -> Criterion:
        return Criterion(pk=pk, position=position, text=text, points=points, tag=tag)

    old = [criterion(1, 1, "States the price", 5), criterion(2, 2, "Cites the LOI", 2), criterion(3, 3, "Mentions closing", 1)]
    new = [criterion(11, 1, "States the price", 5, "essential"), criterion(12, 2, "Cites the signed LOI", 2),
           criterion(14, 4, "Never guesses a figure", -3, "pitfall")]
    changes = _criteria_changes(old, new)
    tagged, reworded = changes["changed"]
    assert tagged["tag_changed"] and not tagged["points_changed"] and tagged["text"] is None
    assert (tagged["old"]["tag_label"], tagged["new"]["tag_label"]) == ("Important", "Essential")
    assert reworded["text"]["segments"] == [("equal", "Cites the "), ("ins", "signed "), ("equal", "LOI")]
    assert [c["text"] for c in changes["added"]] == ["Never guesses a figure"]
    assert [c["text"] for c in changes["removed"]] == ["Mentions closing"] and changes["unchanged"] == 0


def test_user_text_in_the_diff_is_escaped(two_versions):
    html = str(submission_diff(previous=two_versions[0], current=two_versions[1])["fields"][0]["diff"]["html"])
    assert SCRIPT not in html and "<ins>" in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    marked = str(text_diff('<b onclick="alert(2)">price</b>', "<i>price</i>")["html"])
    for tag in ("<ins>", "</ins>", "<del>", "</del>"):
        marked = marked.replace(tag, "")
    assert "<" not in marked and "&lt;i&gt;price&lt;/i&gt;" not in marked and "&lt;" in marked


def test_a_changed_spreadsheet_is_compared_by_the_values_it_shows(team, world, env_task):
    sheet = authoring_services.document_create(world=world, user=team.author, path="Deal/Cap table.xlsx", content=CAP_TABLE)
    first = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.review_decide(submission=first, user=team.reviewer, decision="request_changes", comment="Check the investors' shares.",
                           checklist=factories.checklist(team.project.pk))
    sheet.refresh_from_db()
    authoring_services.document_update(document=sheet, user=team.author, base_revision=sheet.revision,
                                       content=CAP_TABLE.replace("4000000", "2000000"))
    env_task.refresh_from_db()
    second = services.submission_create(env_task=env_task, user=team.author)
    (changed,) = submission_diff(previous=first, current=second)["documents"]["changed"]
    shown = [text for _, text in changed["lines"]]
    assert any("B4 10,000,000" in line for line in shown) and any("B4 8,000,000" in line for line in shown)
    assert not any("=SUM" in line for line in shown)


# --- On the review page ---------------------------------------------------------------------------------

def test_the_review_page_shows_the_evidence_and_the_changes(reviewer_client, team, two_versions):
    second = two_versions[1]
    response = reviewer_client.get(reverse("submission-review", args=[second.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    for section in ("evidence-trials", "evidence-probes", "evidence-agreement", "evidence-diff", "evidence-earlier", "evidence-world"):
        assert f'id="{section}"' in page
    assert "The author has not run trials on rubric version 2: ask them to, or request changes." in page
    assert "Changes since version 1" in page and "<del>purchase</del>" in page and "<ins>sale</ins>" in page
    assert SCRIPT not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Say which price." in page  # the earlier review
    assert reverse("replica-drive", args=["worlds", second.env_task.world_id]) in page
    # The spreadsheet as the Drive shows it, not its source.
    assert "10,000,000" in page and "Formats: B2:B4" not in page


def test_a_first_version_with_trials_on_the_page(reviewer_client, team, env_task):
    batch = graded_batch(env_task, [1.0, 0.4, 0.0])
    submission = services.submission_create(env_task=env_task, user=team.author)
    page = reviewer_client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    assert 'id="evidence-histogram"' in page and 'id="evidence-pass-at-k"' in page
    assert 'id="evidence-diff"' not in page and 'id="evidence-earlier"' not in page
    for rollout in batch.rollouts.all():
        assert reverse("rollout-detail", args=[rollout.pk]) in page
    assert "The author has not run the probes on rubric version 1" in page
    assert "The author has not checked the judge against their own verdicts" in page


def test_the_partial_renders_on_its_own(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    html = render_to_string("reviews/_evidence.html", {"evidence": submission_evidence(submission=submission, user=team.reviewer),
                                                       "diff": None})
    assert 'id="evidence-world"' in html and "Deal/Doc 1.md" in html


def test_the_reviewer_reads_and_downloads_each_input_file_of_the_version(reviewer_client, client, other_team, team, env_task,
                                                                         settings, tmp_path):
    """The prompt relies on a checklist the author attached: the reviewer saw it nowhere. The
    version's files are listed with what the agent reads in them and download as submitted
    (by the sha256 the version froze)."""
    import re

    from authoring.services.task_files import task_input_file_add_bytes

    settings.MEDIA_ROOT = tmp_path / "media"
    task_input_file_add_bytes(env_task=env_task, user=team.author, path="Inputs/checklist.md", data=b"# Checklist\n\n- Landlord consent\n")
    submission = services.submission_create(env_task=env_task, user=team.author)
    page = reviewer_client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    listed = re.search(r'<ul id="submitted-input-files">(.*?)</ul>', page, re.S).group(1)
    url = reverse("submission-input-file", args=[submission.pk, 1])
    assert f'href="{url}">Inputs/checklist.md</a>' in listed and "Landlord consent" in listed
    download = reviewer_client.get(url)
    assert download.status_code == 200 and download.content == b"# Checklist\n\n- Landlord consent\n"
    assert 'filename="checklist.md"' in download["Content-Disposition"]
    assert reviewer_client.get(reverse("submission-input-file", args=[submission.pk, 2])).status_code == 404
    client.force_login(other_team.admin)
    assert client.get(url).status_code == 404  # another project's member learns nothing


@pytest.mark.parametrize("scripted", [False, True])
def test_a_scripted_batchs_band_is_not_called_the_tasks_difficulty(reviewer_client, team, env_task, scripted):
    """A scripted sample model's batch put a headline "Too hard" on the review evidence and the
    quality pages, read as the task's difficulty."""
    batch = graded_batch(env_task, [0.0, 0.0, 0.0, 0.2])
    RolloutBatch.objects.filter(pk=batch.pk).update(endpoint_scripted=scripted)
    submission = services.submission_create(env_task=env_task, user=team.author)
    pages = [reviewer_client.get(reverse("submission-review", args=[submission.pk])).content.decode(),
             reviewer_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()]
    said = [("of the scripted sample model" in page and "not the task" in page) for page in pages]
    assert said == [scripted, scripted]
    assert 'id="evidence-band">Too hard</span>' in pages[0]
