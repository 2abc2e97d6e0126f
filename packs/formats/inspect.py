"""The Inspect AI format: a folder `inspect/` that runs, with the pack unzipped, as

    inspect eval inspect/task.py --model <model> -T judge_model=<model>

The code is fixed and the same in every pack (packs/formats/inspect_files/, copied as is):
task.py (dataset, agent, scorer), world_tools.py (read-only tools over a world zip) and
rubric_grading.py (Taskwright's grading rules, standard library only). What differs per
pack is data this writer produces: samples.jsonl, one Inspect Sample per task version
(streamed to a spool file, one task in memory at a time), and pack.json.

A sample's world is the pack's own `world_files_zipped/<world_id>.zip`, named relative to
samples.jsonl (`../world_files_zipped/...`) in the Sample's `files`: Inspect copies it into
the sample's sandbox as `world.zip`, where the tools read it. A task's input files
(`../task_files/<task_id>/<path>`) go into the sandbox under `task_files/`, listed in
`task_files.json`, and the tools lay them over the world's files.
"""

import json
from pathlib import Path

from packs.formats.base import FormatWriter, PackOutput
from packs.formats.records import PackCriterion, PackTask, PackWorld, input_file_path

FOLDER = "inspect"
TEMPLATES = Path(__file__).resolve().parent / "inspect_files"
TEMPLATE_FILES = ("task.py", "world_tools.py", "rubric_grading.py")
WORLD_IN_SANDBOX = "world.zip"  # world_tools.WORLD_ZIP
TASK_FILES = "task_files.json"  # world_tools.TASK_FILES
TASK_FILES_DIR = "task_files/"  # world_tools.TASK_FILES_DIR


def criterion_metadata(criterion: PackCriterion) -> dict:
    return {
        "id": criterion.id,
        "number": criterion.number,
        "text": criterion.text,
        "points": criterion.points,
        "tag": criterion.tag,
        "grader_kind": criterion.grader_kind,
        "grader_config": criterion.grader_config,
    }


def sample_line(task: PackTask, *, sample_id: str, world_zip: str) -> dict:
    """One line of samples.jsonl, in the field names inspect_ai.dataset.json_dataset reads."""
    return {
        "id": sample_id,
        "input": task.prompt,
        "target": task.reference_answer,
        "metadata": {
            "task_id": task.task_id,
            "version": task.version,
            "title": task.title,
            "domain": task.domain,
            "deliverable_kind": task.deliverable_kind,
            "world_id": task.world_id,
            "world_title": task.world_title,
            "rubric_version": task.rubric_version,
            "criteria": [criterion_metadata(c) for c in task.criteria],
            "positive_points": task.positive_points,
            "pass_threshold": task.pass_threshold,
            "all_must_pass": task.all_must_pass,
            "judge_samples": task.judge_samples,
            "example_tags": list(task.example_tags),
        },
        # Relative to samples.jsonl: json_dataset resolves it against the file's folder.
        "files": {WORLD_IN_SANDBOX: f"../{world_zip}", **_task_files(task)},
    }


def _task_files(task: PackTask) -> dict[str, str]:
    """The task's input files in the sandbox (world_tools lays them over the world): each
    under TASK_FILES_DIR at its path, and their list as TASK_FILES (inline text: a
    `files` value that is no path is the file's content)."""
    if not task.input_files:
        return {}
    paths = [f["path"] for f in task.input_files]
    return {TASK_FILES: json.dumps(paths, ensure_ascii=False),
            **{TASK_FILES_DIR + path: f"../{input_file_path(task.task_id, path)}" for path in paths}}


class InspectWriter(FormatWriter):
    name = "inspect"
    label = "Inspect AI task folder"
    needs_worlds = True

    def __init__(self, *, pack_info: dict, spool_dir: str) -> None:
        super().__init__(pack_info=pack_info, spool_dir=spool_dir)
        self._samples = self.spool("samples.jsonl")
        self._world_zips: dict[str, str] = {}  # world_id → its zip's path in the pack
        self._sample_ids: set[str] = set()  # ids only: Inspect needs them unique
        self._count = 0

    def add_world(self, world: PackWorld) -> None:
        self._world_zips[world.world_id] = world.zip_path

    def add_task(self, task: PackTask) -> None:
        world_zip = self._world_zips.get(task.world_id)
        if world_zip is None:
            raise ValueError(f"{task.task_id} is on world {task.world_id}, which was not added before it")
        # A task's id is the sample id; a second version of the same task in one pack gets "-v<version>".
        sample_id = task.task_id if task.task_id not in self._sample_ids else f"{task.task_id}-v{task.version}"
        if sample_id in self._sample_ids:
            raise ValueError(f"{task.task_id} version {task.version} is in the pack twice")
        self._sample_ids.add(sample_id)
        line = json.dumps(sample_line(task, sample_id=sample_id, world_zip=world_zip), ensure_ascii=False, sort_keys=True)
        self._samples.write(line.encode() + b"\n")
        self._count += 1

    def finish(self, out: PackOutput) -> None:
        for name in TEMPLATE_FILES:
            out.write_bytes(f"{FOLDER}/{name}", (TEMPLATES / name).read_bytes())
        info = {**self.pack_info, "tasks": self._count, "worlds": len(self._world_zips)}
        out.write_bytes(
            f"{FOLDER}/pack.json", (json.dumps(info, ensure_ascii=False, sort_keys=True, indent=2, default=str) + "\n").encode()
        )
        self._samples.seek(0)
        out.write_file(f"{FOLDER}/samples.jsonl", self._samples)
        self._samples.close()
