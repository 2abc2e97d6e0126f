"""HealthBench-style rubric JSONL (FORMATS.md): `healthbench.jsonl`, one line per task version:

    {"prompt": [{"role": "user", "content": <the task's prompt>}],
     "prompt_id": "<task_id>",
     "rubrics": [{"criterion": <text>, "points": <int, negative for a pitfall>, "tags": [...]}, ...],
     "example_tags": [...],
     "ideal_completions_data": {"ideal_completion": <the reference answer>}}

Rubric item tags (HealthBench's own are "axis:…", "level:…"):
- "tag:<essential|important|optional|pitfall>": Taskwright's tag, so per-tag scores come out
  as Taskwright reports them (rollouts.grading.scoring per_tag);
- "criterion_id:<task_id>-c<number>": the pack's criterion id, the same in every format;
- "grader:<llm_judge|check>": how Taskwright grades it. A check criterion is a deterministic
  test in Taskwright (its config is in the taskwright and apex formats); its text can be
  judged like any other here.

A negative item describes something bad: the judge says whether it is present, and a
present one subtracts its points (as in HealthBench). Score = sum of points of met items /
sum of positive points, clipped to [0, 1].

Example tags: the task's own ("domain:…", "deliverable:…", "world:<world_id>", the world's
zip being world_files_zipped/<world_id>.zip, whose files the prompt refers to), then what
a grader needs to decide pass or fail and to tell versions apart:
- "pass_rule:threshold" with "pass_threshold:<float>" (passed when score >= it), or
  "pass_rule:all_must_pass" (passed when every positive item is met and no negative one);
- "judge_samples:<k>" (judge calls per item; the majority decides, a tie is "not met");
- "task_version:<n>", "rubric_version:<n>" (a pack may hold two versions of one task).

Lines are spooled to a file as tasks arrive, then copied into the pack.
"""

import json
from typing import ClassVar

from packs.formats.base import FormatWriter, PackOutput
from packs.formats.records import PackTask

FILE = "healthbench.jsonl"


def rubric_item(criterion) -> dict:
    return {
        "criterion": criterion.text,
        "points": criterion.points,
        "tags": [f"tag:{criterion.tag}", f"criterion_id:{criterion.id}", f"grader:{criterion.grader_kind}"],
    }


def grading_tags(task: PackTask) -> list[str]:
    rule = ["pass_rule:all_must_pass"] if task.all_must_pass else ["pass_rule:threshold", f"pass_threshold:{task.pass_threshold!r}"]
    return [*rule, f"judge_samples:{task.judge_samples}", f"task_version:{task.version}", f"rubric_version:{task.rubric_version}"]


def healthbench_line(task: PackTask) -> dict:
    return {
        "prompt": [{"role": "user", "content": task.prompt}],
        "prompt_id": task.task_id,
        "rubrics": [rubric_item(c) for c in task.criteria],
        "example_tags": [*task.example_tags, *grading_tags(task)],
        "ideal_completions_data": {"ideal_completion": task.reference_answer},
    }


class HealthBenchWriter(FormatWriter):
    name: ClassVar[str] = "healthbench"
    label: ClassVar[str] = "HealthBench-style rubric JSONL"

    def __init__(self, *, pack_info: dict, spool_dir: str) -> None:
        super().__init__(pack_info=pack_info, spool_dir=spool_dir)
        self.lines = self.spool("lines")

    def add_task(self, task: PackTask) -> None:
        self.lines.write(json.dumps(healthbench_line(task), ensure_ascii=False).encode() + b"\n")

    def finish(self, out: PackOutput) -> None:
        self.lines.seek(0)
        out.write_file(FILE, self.lines)
        self.lines.close()
