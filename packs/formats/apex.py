"""APEX-Agents task files (FORMATS.md "APEX-Agents task files"), at the pack's root:

```
tasks_and_rubrics.json    [{task_id, task_name, domain, world_id, prompt, task_input_files, rubric: [{verifier_id, criteria}]}]
                          (task_input_files: the pack paths of the task's own files, task_files/<task_id>/<path>)
world_descriptions.json   [{world_id, world_name, description, facts, counts, world_zip}]
verifiers.json            [{verifier_id, verifier_version, world_id, task_id, eval_config_id, verifier_values: {...},
                            verifier_index, verifier_dependencies}]
eval_configs.json         [{eval_config_id, task_id, task_version, rubric_version, scoring_config: {...}, graders: {...}}]
```

The worlds themselves are `world_files_zipped/<world_id>.zip`, written by the build.

How Taskwright's rubric is expressed in APEX's fields:

- One verifier per criterion; `verifier_id` is the PackCriterion id ("<task_id>-c<number>"),
  `verifier_index` its 0-based position in the task's rubric (criterion number - 1),
  `verifier_version` the rubric version it was frozen in. Criteria are judged alone:
  `verifier_dependencies` is always [].
- Negative (pitfall) criteria: `weight` is always the absolute value of the points and
  `negative_criteria` is true. Their text describes the bad behaviour, and "met" means it is
  present (as for Taskwright's judge); a met negative verifier subtracts its weight.
- `is_primary_objective` is true for the criteria tagged "essential".
- `tags` is [<essential|important|optional|pitfall>, "grader:<llm_judge|check>"];
  `criteria_explanation` the author's note on why the criterion matters.

The scoring rule lives in `eval_configs.json`, one eval config per task version, keyed
by `eval_config_id` ("<task_id>-v<task version>"), which each of its verifiers names:

    scoring_config = {
        "score": "weighted_points",   # (sum of weights of met non-negative verifiers
                                      #  - sum of weights of met negative verifiers)
                                      # / sum of weights of non-negative verifiers, clipped to [0, 1];
                                      # 0 if there is no positive weight. A verifier without a verdict is not met.
        "clip": [0, 1],
        "pass": "threshold" | "all_must_pass",
        "pass_threshold": 0.7,        # "threshold": passed when score >= pass_threshold
                                      # "all_must_pass": passed when every non-negative verifier is met
                                      #   and no negative one is (the threshold is then not used)
        "positive_weight": 28,        # the denominator, for checking
        "judge_samples": 1,           # judge calls per verifier; the majority decides, a tie is "not met"
    }

`graders` maps each verifier_id to how Taskwright grades it: {"kind": "llm_judge", "config": {}
or {"sees": ["answer", "files", "trajectory"]}}, or a deterministic check {"kind": "check",
"config": {"check": "contains", ...}} (rollouts.grading.checks). An APEX judge may grade a
check verifier from its criteria text like any other.

This reproduces packs.formats.records.score (and rollouts.grading.scoring) exactly.

Each JSON list is streamed to a spool file, one item at a time, so memory does not grow
with the pack. Output is deterministic: items in the pack's order, keys in the order above.
"""

import json
from typing import BinaryIO, ClassVar

from packs.formats.base import FormatWriter, PackOutput
from packs.formats.records import PackCriterion, PackTask, PackWorld, input_file_path

TASKS_FILE = "tasks_and_rubrics.json"
WORLDS_FILE = "world_descriptions.json"
VERIFIERS_FILE = "verifiers.json"
EVAL_CONFIGS_FILE = "eval_configs.json"


class JsonListSpool:
    """A JSON list written item by item: "[", the items joined by ",\\n", "]". Each item is
    one line of its own, so the file diffs and greps by item. (Not indented within an item:
    json's C encoder serves only unindented output, and the indenting pure-Python one took
    about 40 % of a pack's build; docs/performance.md.)"""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.count = 0

    def add(self, item: dict) -> None:
        text = json.dumps(item, ensure_ascii=False)
        self.file.write((("[\n  " if self.count == 0 else ",\n  ") + text).encode())
        self.count += 1

    def close_into(self, out: PackOutput, path: str) -> None:
        self.file.write(b"\n]\n" if self.count else b"[]\n")
        self.file.seek(0)
        out.write_file(path, self.file)
        self.file.close()


def eval_config_id(task: PackTask) -> str:
    # Per task version: two versions of one task in a pack may grade differently.
    return f"{task.task_id}-v{task.version}"


def verifier_values(criterion: PackCriterion) -> dict:
    return {
        "criteria": criterion.text,
        "is_primary_objective": criterion.tag == "essential",
        "weight": abs(criterion.points),
        "negative_criteria": criterion.is_negative,
        "criteria_explanation": criterion.explanation,
        "tags": [criterion.tag, f"grader:{criterion.grader_kind}"],
    }


def scoring_config(task: PackTask) -> dict:
    return {
        "score": "weighted_points",
        "clip": [0, 1],
        "pass": "all_must_pass" if task.all_must_pass else "threshold",
        "pass_threshold": task.pass_threshold,
        "positive_weight": task.positive_points,
        "judge_samples": task.judge_samples,
    }


class ApexWriter(FormatWriter):
    name: ClassVar[str] = "apex"
    label: ClassVar[str] = "APEX-Agents / Archipelago (tasks, worlds, verifiers)"
    needs_worlds: ClassVar[bool] = True

    def __init__(self, *, pack_info: dict, spool_dir: str) -> None:
        super().__init__(pack_info=pack_info, spool_dir=spool_dir)
        self.tasks = JsonListSpool(self.spool("tasks"))
        self.worlds = JsonListSpool(self.spool("worlds"))
        self.verifiers = JsonListSpool(self.spool("verifiers"))
        self.eval_configs = JsonListSpool(self.spool("eval-configs"))

    def add_world(self, world: PackWorld) -> None:
        self.worlds.add({
            "world_id": world.world_id,
            "world_name": world.title,
            "description": world.outline,
            "facts": [{"key": fact.get("key", ""), "value": fact.get("value", "")} for fact in world.facts],
            "counts": world.counts,
            "world_zip": world.zip_path,
        })

    def add_task(self, task: PackTask) -> None:
        config_id = eval_config_id(task)
        self.tasks.add({
            "task_id": task.task_id,
            "task_name": task.title,
            "domain": task.domain,
            "world_id": task.world_id,
            "prompt": task.prompt,
            # The task's own files, laid over its world's filesystem/ at the same paths: where
            # each is in the pack (task_files/<task_id>/<path>); [] when it has none.
            "task_input_files": [input_file_path(task.task_id, f["path"]) for f in task.input_files],
            "rubric": [{"verifier_id": c.id, "criteria": c.text} for c in task.criteria],
        })
        for criterion in task.criteria:
            self.verifiers.add({
                "verifier_id": criterion.id,
                "verifier_version": task.rubric_version,
                "world_id": task.world_id,
                "task_id": task.task_id,
                "eval_config_id": config_id,
                "verifier_values": verifier_values(criterion),
                "verifier_index": criterion.number - 1,
                "verifier_dependencies": [],
            })
        self.eval_configs.add({
            "eval_config_id": config_id,
            "task_id": task.task_id,
            "task_version": task.version,
            "rubric_version": task.rubric_version,
            "scoring_config": scoring_config(task),
            "graders": {c.id: {"kind": c.grader_kind, "config": c.grader_config} for c in task.criteria},
        })

    def finish(self, out: PackOutput) -> None:
        self.tasks.close_into(out, TASKS_FILE)
        self.worlds.close_into(out, WORLDS_FILE)
        self.verifiers.close_into(out, VERIFIERS_FILE)
        self.eval_configs.close_into(out, EVAL_CONFIGS_FILE)
