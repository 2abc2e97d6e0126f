"""Taskwright's own pack format: enough to rebuild the tasks, rubrics, grading settings
and worlds in another project (packs.importer reads it back).

```
taskwright/worlds.jsonl   one line per world state: world_id, title, outline, facts, and its zip
                          (world_files_zipped/<world_id>.zip: the documents, with their briefs,
                          metadata and status in the zip's .apps_data/taskwright/world.json)
taskwright/tasks.jsonl    one line per task version: the task, its world_id, its input files
                          ([{path, size, sha256}], the bytes at task_files/<task_id>/<path>), and
                          the rubric with every criterion and the grading settings
```

Export → import into an empty project → export gives the same bytes but for the fields
the manifest's `may_differ` names (ids and numbers the new project gives).
"""

import json

from packs.formats.base import FormatWriter, PackOutput
from packs.formats.records import PackTask, PackWorld

NATIVE_VERSION = 1


def _line(value: dict) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode() + b"\n"


class TaskwrightWriter(FormatWriter):
    name = "taskwright"
    label = "Taskwright's own format (importable)"
    needs_worlds = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._worlds = self.spool("worlds.jsonl")
        self._tasks = self.spool("tasks.jsonl")

    def add_world(self, world: PackWorld) -> None:
        self._worlds.write(_line({
            "taskwright_native": NATIVE_VERSION, "world_id": world.world_id, "title": world.title, "outline": world.outline,
            "facts": list(world.facts), "zip": world.zip_path, "counts": world.counts,
        }))

    def add_task(self, task: PackTask) -> None:
        self._tasks.write(_line({
            "taskwright_native": NATIVE_VERSION,
            "task_id": task.task_id,
            "version": task.version,
            "title": task.title,
            "prompt": task.prompt,
            "deliverable_kind": task.deliverable_kind,
            "reference_answer": task.reference_answer,
            "world_id": task.world_id,
            "input_files": list(task.input_files),
            "rubric": {
                "version": task.rubric_version,
                "pass_threshold": task.pass_threshold,
                "all_must_pass": task.all_must_pass,
                "judge_samples": task.judge_samples,
                "criteria": [
                    {"text": c.text, "points": c.points, "tag": c.tag, "grader_kind": c.grader_kind,
                     "grader_config": c.grader_config, "explanation": c.explanation}
                    for c in task.criteria
                ],
            },
        }))

    def finish(self, out: PackOutput) -> None:
        for path, spool in (("taskwright/worlds.jsonl", self._worlds), ("taskwright/tasks.jsonl", self._tasks)):
            spool.seek(0)
            out.write_file(path, spool)
            spool.close()
