"""The APEX-Agents files, read as an APEX harness and grader would: by field name only."""

import json
from dataclasses import replace

import pytest

from packs.formats.apex import ApexWriter
from packs.formats.records import PackCriterion, score
from tests.packs.helpers import VERDICT_PATTERNS, grading_variants, met_by_id, write_pack

TASK_FIELDS = ["task_id", "task_name", "domain", "world_id", "prompt", "task_input_files", "rubric"]
VERIFIER_FIELDS = ["verifier_id", "verifier_version", "world_id", "task_id", "eval_config_id", "verifier_values", "verifier_index",
                   "verifier_dependencies"]
VERIFIER_VALUES = ["criteria", "is_primary_objective", "weight", "negative_criteria", "criteria_explanation", "tags"]


def read(pack, name: str):
    return json.loads((pack / name).read_text(encoding="utf-8"))


def apex_score(pack, task_id: str, met: dict[str, bool]) -> tuple[float, bool]:
    """A grader that knows only verifiers.json and the eval config its verifiers name."""
    verifiers = [v for v in read(pack, "verifiers.json") if v["task_id"] == task_id]
    (config_id,) = {v["eval_config_id"] for v in verifiers}
    config = next(c for c in read(pack, "eval_configs.json") if c["eval_config_id"] == config_id)["scoring_config"]
    positive = [v for v in verifiers if not v["verifier_values"]["negative_criteria"]]
    negative = [v for v in verifiers if v["verifier_values"]["negative_criteria"]]
    weight = sum(v["verifier_values"]["weight"] for v in positive)
    assert weight == config["positive_weight"]
    points = sum(v["verifier_values"]["weight"] for v in positive if met.get(v["verifier_id"])) - sum(
        v["verifier_values"]["weight"] for v in negative if met.get(v["verifier_id"]))
    low, high = config["clip"]
    value = max(low, min(high, points / weight)) if weight else 0.0
    if config["pass"] == "all_must_pass":
        passed = all(met.get(v["verifier_id"]) for v in positive) and not any(met.get(v["verifier_id"]) for v in negative)
    else:
        assert config["pass"] == "threshold"
        passed = value >= config["pass_threshold"]
    return value, passed


def test_the_files_have_apex_field_names_and_agree_with_each_other(demo_pack, tmp_path):
    pack = write_pack(ApexWriter, tmp_path, tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    task, world = demo_pack.tasks[0], demo_pack.worlds[0]
    tasks, worlds, verifiers = read(pack, "tasks_and_rubrics.json"), read(pack, "world_descriptions.json"), read(pack, "verifiers.json")
    configs = read(pack, "eval_configs.json")

    assert [list(t) for t in tasks] == [TASK_FIELDS]
    (apex_task,) = tasks
    assert apex_task["task_id"] == task.task_id and apex_task["task_name"] == "Identify the change-of-control risks"
    assert apex_task["domain"] == "Corporate law — M&A" and apex_task["prompt"] == task.prompt
    assert apex_task["task_input_files"] == [f"task_files/{task.task_id}/Inputs/Acme change-of-control checklist.md"]  # the demo's
    assert [list(r) for r in apex_task["rubric"]] == [["verifier_id", "criteria"]] * 6
    assert apex_task["rubric"][5]["criteria"] == "Says the Northwind MSA terminates automatically on completion."

    assert [list(w)[:2] for w in worlds] == [["world_id", "world_name"]]
    assert worlds[0]["world_id"] == world.world_id == apex_task["world_id"] and worlds[0]["world_name"] == "Acme acquires Beta"
    assert worlds[0]["description"].startswith("# Acme acquires Beta")
    assert {"key": "Deal code name", "value": "Project Lighthouse"} in worlds[0]["facts"]
    assert worlds[0]["world_zip"] == f"world_files_zipped/{world.world_id}.zip"

    assert all(list(v) == VERIFIER_FIELDS and list(v["verifier_values"]) == VERIFIER_VALUES for v in verifiers)
    assert {r["verifier_id"] for r in apex_task["rubric"]} == {v["verifier_id"] for v in verifiers}
    assert len(verifiers) == len({v["verifier_id"] for v in verifiers}) == 6
    assert {v["world_id"] for v in verifiers} == {w["world_id"] for w in worlds}
    assert [v["verifier_index"] for v in verifiers] == list(range(6))
    assert {v["verifier_version"] for v in verifiers} == {demo_pack.submission.rubric_version.number}
    assert all(v["verifier_dependencies"] == [] for v in verifiers)
    assert {v["eval_config_id"] for v in verifiers} == {c["eval_config_id"] for c in configs}

    first, pitfall = verifiers[0]["verifier_values"], verifiers[5]["verifier_values"]
    assert (first["weight"], first["negative_criteria"], first["is_primary_objective"]) == (10, False, True)
    assert (pitfall["weight"], pitfall["negative_criteria"], pitfall["is_primary_objective"]) == (6, True, False)
    assert pitfall["tags"] == ["pitfall", "grader:llm_judge"] and pitfall["criteria_explanation"].startswith("Wrong: clause 14.2")
    assert [v["verifier_values"]["is_primary_objective"] for v in verifiers] == [True, True, False, False, False, False]

    (config,) = configs
    assert config["scoring_config"] == {"score": "weighted_points", "clip": [0, 1], "pass": "threshold", "pass_threshold": 0.7,
                                        "positive_weight": 28, "judge_samples": 1}
    assert set(config["graders"]) == {v["verifier_id"] for v in verifiers}
    assert "—" in (pack / "tasks_and_rubrics.json").read_text(encoding="utf-8")  # raw UTF-8, not \u2014


def test_a_grader_reading_only_verifiers_and_the_eval_config_scores_as_taskwright(demo_pack, tmp_path):
    checked = 0
    for variant, task in grading_variants(demo_pack.tasks[0]).items():
        pack = write_pack(ApexWriter, tmp_path / variant.replace(" ", "-"), tasks=[task], worlds=demo_pack.worlds)
        for pattern, numbers in VERDICT_PATTERNS.items():
            met = met_by_id(task, numbers)
            assert apex_score(pack, task.task_id, met) == pytest.approx(score(task, met)), (variant, pattern)
            checked += 1
    outcomes = {(variant, pattern): score(task, met_by_id(task, numbers))
                for variant, task in grading_variants(demo_pack.tasks[0]).items() for pattern, numbers in VERDICT_PATTERNS.items()}
    # The patterns do tell the rules apart: the pitfall costs a pass, clipping and the exact threshold matter.
    assert outcomes["threshold", "all positives and the pitfall"] == (pytest.approx(22 / 28), True)
    assert outcomes["all must pass", "all positives and the pitfall"] == (pytest.approx(22 / 28), False)
    assert outcomes["all must pass", "all positives met"] == (1.0, True)
    assert outcomes["threshold", "only the pitfall"] == (0.0, False)
    assert outcomes["threshold 0.5", "half the points"] == (0.5, True) and outcomes["threshold", "half the points"] == (0.5, False)
    assert checked == 21


def test_a_check_criterion_keeps_its_config_for_the_grader(demo_pack, tmp_path):
    task = demo_pack.tasks[0]
    check = PackCriterion(id=f"{task.task_id}-c7", number=7, text="Mentions the escrow.", points=1, tag="optional", grader_kind="check",
                          grader_config={"check": "contains", "value": "escrow"})
    pack = write_pack(ApexWriter, tmp_path, tasks=[replace(task, criteria=(*task.criteria, check))], worlds=demo_pack.worlds)
    (config,) = read(pack, "eval_configs.json")
    assert config["graders"][check.id] == {"kind": "check", "config": {"check": "contains", "value": "escrow"}}
    assert config["graders"][f"{task.task_id}-c1"] == {"kind": "llm_judge", "config": {}}
    assert read(pack, "verifiers.json")[6]["verifier_values"]["tags"] == ["optional", "grader:check"]


def test_several_tasks_and_world_states_stream_into_one_list_each(demo_pack, tmp_path):
    task, world = demo_pack.tasks[0], demo_pack.worlds[0]
    later_world = replace(world, world_id=f"{world.world_id}-2", zip_path=f"world_files_zipped/{world.world_id}-2.zip", title="Later")
    other = replace(task, task_id="task-900", task_pk=900, submission_id=900, world_id=later_world.world_id,
                    criteria=tuple(replace(c, id=f"task-900-c{c.number}") for c in task.criteria[:3]))
    pack = write_pack(ApexWriter, tmp_path, tasks=[task, other], worlds=[world, later_world])
    tasks, worlds, verifiers = read(pack, "tasks_and_rubrics.json"), read(pack, "world_descriptions.json"), read(pack, "verifiers.json")
    assert [t["task_id"] for t in tasks] == [task.task_id, "task-900"]
    assert [w["world_id"] for w in worlds] == [world.world_id, later_world.world_id]
    assert [(v["task_id"], v["world_id"]) for v in verifiers] == (
        [(task.task_id, world.world_id)] * 6 + [("task-900", later_world.world_id)] * 3
    )
    assert [c["eval_config_id"] for c in read(pack, "eval_configs.json")] == [f"{task.task_id}-v1", "task-900-v1"]
    again = write_pack(ApexWriter, tmp_path / "again", tasks=[task, other], worlds=[world, later_world])
    for name in ("tasks_and_rubrics.json", "world_descriptions.json", "verifiers.json", "eval_configs.json"):
        assert (pack / name).read_bytes() == (again / name).read_bytes(), name  # deterministic


def test_no_task_still_writes_empty_lists(tmp_path):
    pack = write_pack(ApexWriter, tmp_path, tasks=[])
    for name in ("tasks_and_rubrics.json", "world_descriptions.json", "verifiers.json", "eval_configs.json"):
        assert read(pack, name) == []


def test_each_list_item_is_one_line_of_its_own(demo_pack, tmp_path):
    """So a release diffs and greps by verifier, task and world."""
    pack = write_pack(ApexWriter, tmp_path, tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    for name in ("tasks_and_rubrics.json", "world_descriptions.json", "verifiers.json", "eval_configs.json"):
        lines = (pack / name).read_text(encoding="utf-8").splitlines()
        items = read(pack, name)
        assert (lines[0], lines[-1], len(lines)) == ("[", "]", len(items) + 2), name
        assert [json.loads(line.strip().rstrip(",")) for line in lines[1:-1]] == items, name
