"""healthbench.jsonl, read as a HealthBench grader would: it knows the lines and the
judge's verdicts, nothing of Taskwright's tables, and must score as Taskwright did."""

import json

import pytest

from packs.formats.healthbench import HealthBenchWriter
from packs.formats.records import score
from rollouts.grading.services import grade_execute
from rollouts.models import Grade, GradeStatus, RolloutBatch, RolloutStatus
from tests.fake_llm import Reply
from tests.packs.helpers import VERDICT_PATTERNS, grading_variants, met_by_id, write_pack

# What the fake judge finds in each of the demo batch's four rollouts, by criterion number
# (their scripted answers are the same text, so the judge is told per grade).
JUDGED_MET = [{1, 2, 3, 4, 5}, {1, 2, 3}, {1, 2, 6}, {6}]


def read_lines(pack) -> list[dict]:
    return [json.loads(line) for line in (pack / "healthbench.jsonl").read_text(encoding="utf-8").splitlines()]


def tag_value(tags: list[str], name: str) -> str | None:
    return next((tag.split(":", 1)[1] for tag in tags if tag.startswith(f"{name}:")), None)


def healthbench_score(line: dict, met: dict[str, bool]) -> tuple[float, bool, dict]:
    """HealthBench's rule over one line: met points / positive points, clipped to [0, 1];
    pass by the line's pass_rule tags; per rubric tag the same over that tag's items.
    `met` by criterion_id tag (a missing verdict is not met)."""

    def ratio(items):
        positive = sum(i["points"] for i in items if i["points"] > 0)
        achieved = sum(i["points"] for i in items if met.get(tag_value(i["tags"], "criterion_id")))
        return max(0.0, min(1.0, achieved / positive)) if positive else None

    items = line["rubrics"]
    value = ratio(items) or 0.0
    if tag_value(line["example_tags"], "pass_rule") == "all_must_pass":
        is_met = [(i["points"], bool(met.get(tag_value(i["tags"], "criterion_id")))) for i in items]
        passed = all(m for p, m in is_met if p > 0) and not any(m for p, m in is_met if p < 0)
    else:
        passed = value >= float(tag_value(line["example_tags"], "pass_threshold"))
    tags = sorted({tag_value(i["tags"], "tag") for i in items})
    return value, passed, {tag: ratio([i for i in items if tag_value(i["tags"], "tag") == tag]) for tag in tags}


def judge_finding(met_numbers: set[int], texts: dict[str, int]):
    """A fake judge that says 'met' for the criteria numbered in `met_numbers`, recognising
    each criterion by its text in the judge prompt."""

    def respond(request) -> Reply:
        content = request.body["messages"][1]["content"]
        criterion = content.split("\n# Criterion (", 1)[1].split("\n", 1)[1]
        number = texts[criterion]
        return Reply(structured={"explanation": f"Criterion {number}.", "criteria_met": number in met_numbers})

    return respond


@pytest.fixture
def graded_batch(demo_pack, endpoint, fake_llm) -> RolloutBatch:
    """The demo batch's four rollouts, graded by the fake judge against the submitted rubric version."""
    batch = RolloutBatch.objects.get(env_task=demo_pack.env_task)
    # The batch froze the rubric it ran with before the task was submitted; the submission
    # froze the same (unchanged) version, so the grades and the pack speak of one rubric.
    assert batch.rubric_version_id == demo_pack.submission.rubric_version_id
    rollouts = list(batch.rollouts.order_by("pk"))
    assert [r.status for r in rollouts] == [RolloutStatus.COMPLETED] * 4
    grades = Grade.objects.filter(rollout__batch=batch).order_by("rollout_id")
    # The seed queued a grade per rollout, to be judged by the batch's scripted endpoint
    # (it never says "met"); have them judged by the fake judge instead.
    assert [g.status for g in grades] == [GradeStatus.QUEUED] * 4
    grades.update(judge_endpoint=endpoint, judge_endpoint_name=endpoint.name)
    texts = {c.text: c.number for c in demo_pack.tasks[0].criteria}
    for grade, met_numbers in zip(grades, JUDGED_MET, strict=True):
        fake_llm.responder = judge_finding(met_numbers, texts)
        grade_execute(grade_id=grade.pk)
    assert len(fake_llm.requests) == 4 * 6
    return batch


def test_a_grader_reading_only_the_jsonl_and_the_verdicts_scores_as_taskwright(demo_pack, graded_batch, tmp_path):
    pack = write_pack(HealthBenchWriter, tmp_path, tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    (line,) = read_lines(pack)
    assert line["prompt_id"] == demo_pack.tasks[0].task_id
    rubric = demo_pack.submission.rubric_version
    number_of = {pk: number for number, pk in enumerate(rubric.criteria.values_list("pk", flat=True), start=1)}  # (position order)
    results = []
    for grade in Grade.objects.filter(rollout__batch=graded_batch).order_by("rollout_id"):
        assert grade.status == GradeStatus.GRADED and grade.rubric_version_id == rubric.pk
        met = {f"{line['prompt_id']}-c{number_of[v.criterion_id]}": v.met for v in grade.verdicts.all()}
        value, passed, per_tag = healthbench_score(line, met)
        assert value == pytest.approx(grade.score) and passed is grade.passed
        assert per_tag == {
            tag: pytest.approx(scores["score"]) if scores["score"] is not None else None for tag, scores in grade.per_tag.items()
        }
        results.append((value, passed))
    # The four grades differ, a pitfall and clipping included: the comparison means something.
    assert results == [(1.0, True), (pytest.approx(22 / 28), True), (pytest.approx(12 / 28), False), (0.0, False)]


def test_the_line_has_healthbench_fields_and_the_grading_settings(demo_pack, tmp_path):
    task = demo_pack.tasks[0]
    pack = write_pack(HealthBenchWriter, tmp_path, tasks=[task, grading_variants(task)["all must pass"]], worlds=demo_pack.worlds)
    first, strict = read_lines(pack)
    assert list(first) == ["prompt", "prompt_id", "rubrics", "example_tags", "ideal_completions_data"]
    assert first["prompt"] == [{"role": "user", "content": task.prompt}]
    assert first["ideal_completions_data"] == {"ideal_completion": task.reference_answer}
    assert [(i["points"], i["tags"]) for i in first["rubrics"]][::5] == [
        (10, ["tag:essential", f"criterion_id:{task.task_id}-c1", "grader:llm_judge"]),
        (-6, ["tag:pitfall", f"criterion_id:{task.task_id}-c6", "grader:llm_judge"]),
    ]
    assert first["rubrics"][5]["criterion"] == "Says the Northwind MSA terminates automatically on completion."
    assert first["example_tags"] == [*task.example_tags, "pass_rule:threshold", "pass_threshold:0.7", "judge_samples:1", "task_version:1",
                                     f"rubric_version:{task.rubric_version}"]
    assert "pass_rule:all_must_pass" in strict["example_tags"] and tag_value(strict["example_tags"], "pass_threshold") is None
    assert "Corporate law — M&A" in (pack / "healthbench.jsonl").read_text(encoding="utf-8")  # raw UTF-8


def test_the_healthbench_rule_matches_taskwright_for_every_pass_rule(demo_pack, tmp_path):
    for variant, task in grading_variants(demo_pack.tasks[0]).items():
        (line,) = read_lines(write_pack(HealthBenchWriter, tmp_path / variant.replace(" ", "-"), tasks=[task], worlds=demo_pack.worlds))
        for pattern, numbers in VERDICT_PATTERNS.items():
            met = met_by_id(task, numbers)
            assert healthbench_score(line, met)[:2] == pytest.approx(score(task, met)), (variant, pattern)


def test_no_task_writes_an_empty_file(tmp_path):
    assert (write_pack(HealthBenchWriter, tmp_path, tasks=[]) / "healthbench.jsonl").read_bytes() == b""
