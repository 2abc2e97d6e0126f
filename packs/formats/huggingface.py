"""A Hugging Face dataset (FORMATS.md "Hugging Face datasets"):

```
hf/tasks.parquet    one row per task version, typed columns (SCHEMA)
hf/README.md        the dataset card: a YAML header naming the config and split, then what the columns are
```

`datasets.load_dataset("parquet", data_files=...)` (or the Hub, from the card's `configs`)
loads it with the types of SCHEMA. Rows are written with pyarrow's ParquetWriter in row
groups of ROW_GROUP_ROWS as tasks arrive, so at most that many rows are ever held.
"""

from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from packs.formats.base import FormatWriter, PackOutput
from packs.formats.records import PackTask

PARQUET_FILE = "hf/tasks.parquet"
CARD_FILE = "hf/README.md"
ROW_GROUP_ROWS = 500

CRITERION = pa.struct([
    pa.field("id", pa.string(), nullable=False),
    pa.field("criterion", pa.string(), nullable=False),
    pa.field("points", pa.int32(), nullable=False),
    pa.field("tags", pa.list_(pa.string()), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
])

INPUT_FILE = pa.struct([
    pa.field("path", pa.string(), nullable=False),
    pa.field("size", pa.int64(), nullable=False),
    pa.field("sha256", pa.string(), nullable=False),
])

SCHEMA = pa.schema([
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("task_version", pa.int32(), nullable=False),
    pa.field("submission_id", pa.int64(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("world_id", pa.string(), nullable=False),
    pa.field("world_title", pa.string(), nullable=False),
    pa.field("prompt", pa.string(), nullable=False),
    pa.field("reference_answer", pa.string(), nullable=False),
    pa.field("deliverable_kind", pa.string(), nullable=False),
    pa.field("rubric_version", pa.int32(), nullable=False),
    pa.field("pass_threshold", pa.float64(), nullable=False),
    pa.field("all_must_pass", pa.bool_(), nullable=False),
    pa.field("judge_samples", pa.int32(), nullable=False),
    pa.field("positive_points", pa.int32(), nullable=False),
    pa.field("rubric", pa.list_(CRITERION), nullable=False),
    pa.field("example_tags", pa.list_(pa.string()), nullable=False),
    pa.field("input_files", pa.list_(INPUT_FILE), nullable=False),
    # The latest measured difficulty; null when the task was never measured.
    pa.field("difficulty_pass_at_1", pa.float64()),
    pa.field("difficulty_pass_at_k", pa.float64()),
    pa.field("difficulty_k", pa.int32()),
    pa.field("difficulty_n", pa.int32()),
    pa.field("difficulty_band", pa.string()),
    pa.field("difficulty_model", pa.string()),
    pa.field("cost_model_usd", pa.float64()),
])

COLUMNS = {  # for the card: every column of SCHEMA
    "task_id": "the task's id in the pack (`task-<n>`); the same in every format of the pack",
    "task_version": "the approved version of the task (1 for its first)",
    "submission_id": "Taskwright's id of the approved submission",
    "title": "the task's title",
    "domain": "the project the task belongs to",
    "world_id": "the world the task runs on: `world_files_zipped/<world_id>.zip` in the pack",
    "world_title": "the world's title",
    "prompt": "what the agent is asked",
    "reference_answer": "the author's reference answer (for graders and readers; never shown to the agent)",
    "deliverable_kind": "what the agent hands in (answer, file, …)",
    "rubric_version": "the rubric version the task was approved with",
    "pass_threshold": "a score at or above it passes (unless `all_must_pass`)",
    "all_must_pass": "when true, passing needs every positive criterion met and no pitfall",
    "judge_samples": "judge calls per criterion; the majority decides, a tie is not met",
    "positive_points": "the sum of the rubric's positive points: the score's denominator",
    "rubric": "the criteria, in order: `id`, `criterion` (text), `points` (negative for a pitfall), "
              "`tags` ([essential|important|optional|pitfall]), `kind` (llm_judge or check)",
    "example_tags": "the task's taxonomy: `domain:…`, `deliverable:…`, `world:…`",
    "input_files": "the task's own input files, laid over its world's files at `path`: `path`, `size` (bytes), `sha256`; "
                   "the bytes are in the pack at `task_files/<task_id>/<path>`",
    "difficulty_pass_at_1": "the latest measured pass@1 (null if never measured)",
    "difficulty_pass_at_k": "the latest measured pass@k",
    "difficulty_k": "the k of `difficulty_pass_at_k`",
    "difficulty_n": "rollouts the difficulty was measured on",
    "difficulty_band": "the difficulty band",
    "difficulty_model": "the model whose trial rollouts measured it",
    "cost_model_usd": "model spend on the task, in US dollars (null if unknown)",
}


def _number(value) -> float | None:
    return None if value is None else float(value)


def _count(value) -> int | None:
    return None if value is None else int(value)


def task_row(task: PackTask) -> dict:
    difficulty = task.difficulty or {}
    return {
        "task_id": task.task_id,
        "task_version": task.version,
        "submission_id": task.submission_id,
        "title": task.title,
        "domain": task.domain,
        "world_id": task.world_id,
        "world_title": task.world_title,
        "prompt": task.prompt,
        "reference_answer": task.reference_answer,
        "deliverable_kind": task.deliverable_kind,
        "rubric_version": task.rubric_version,
        "pass_threshold": task.pass_threshold,
        "all_must_pass": task.all_must_pass,
        "judge_samples": task.judge_samples,
        "positive_points": task.positive_points,
        "rubric": [{"id": c.id, "criterion": c.text, "points": c.points, "tags": [c.tag], "kind": c.grader_kind} for c in task.criteria],
        "example_tags": list(task.example_tags),
        "input_files": [dict(f) for f in task.input_files],
        "difficulty_pass_at_1": _number(difficulty.get("pass_at_1")),
        "difficulty_pass_at_k": _number(difficulty.get("pass_at_k")),
        "difficulty_k": _count(difficulty.get("k")),
        "difficulty_n": _count(difficulty.get("n")),
        "difficulty_band": difficulty.get("band"),
        "difficulty_model": difficulty.get("model"),
        "cost_model_usd": _number(task.cost.get("model_usd")),
    }


def _type_name(kind: pa.DataType) -> str:
    if pa.types.is_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "struct{" + ", ".join(f"{f.name}: {_type_name(f.type)}" for f in kind) + "}"
    return str(kind)


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "n>1M"


def dataset_card(pack_info: dict, *, rows: int) -> str:
    name = str(pack_info.get("name") or "Taskwright pack")
    version = str(pack_info.get("version") or "")
    header = {
        "pretty_name": name,
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "tasks.parquet"}]}],
        "size_categories": [_size_category(rows)],
        "tags": ["taskwright", "rubrics", "agent-evaluation"],
    }
    origin = f"Pack **{name}**, version **{version or 'unversioned'}**"
    if pack_info.get("project"):
        origin += f", from the Taskwright project `{pack_info['project']}`"
    if pack_info.get("created_at"):
        origin += f", built {pack_info['created_at']}"
    columns = "\n".join(
        f"- `{f.name}` ({_type_name(f.type)}{', nullable' if f.nullable else ''}): {COLUMNS[f.name]}" for f in SCHEMA
    )
    return f"""---
{yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip()}
---

# {name}

{origin}.
{rows} task version{"" if rows == 1 else "s"}, one row each, in `tasks.parquet` (the `default` config, split `train`).

Each task is a prompt to an agent working in a world of documents, mail, chat and calendar,
graded by a weighted rubric. The worlds are not in this dataset: they are in the pack, as
`world_files_zipped/<world_id>.zip` (the APEX-Agents / Archipelago layout). A task's own input
files (`input_files`) are in the pack too, at `task_files/<task_id>/<path>`, laid over its world's
files at the same paths.

```python
from datasets import load_dataset

tasks = load_dataset("parquet", data_files="tasks.parquet", split="train")
```

## Columns

{columns}

## Scoring

Judge each criterion of `rubric` on its own (met or not; for a negative criterion, "met"
means the bad behaviour it describes is present). The score is the sum of the points of the
met criteria divided by `positive_points`, clipped to [0, 1]. The attempt passes when the
score is at least `pass_threshold`, or, when `all_must_pass` is true, when every
positive criterion is met and no negative one is. With `judge_samples` above 1, judge each
criterion that many times and take the majority (a tie is not met).

## Licence

Set by the publisher.
"""


class HuggingFaceWriter(FormatWriter):
    name: ClassVar[str] = "huggingface"
    label: ClassVar[str] = "Hugging Face dataset (Parquet + card)"

    def __init__(self, *, pack_info: dict, spool_dir: str) -> None:
        super().__init__(pack_info=pack_info, spool_dir=spool_dir)
        self.parquet = self.spool("tasks.parquet")
        self.writer: pq.ParquetWriter | None = None
        self.buffer: list[dict] = []
        self.rows = 0

    def _flush(self) -> None:
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.parquet, SCHEMA)
        if self.buffer:
            self.writer.write_table(pa.Table.from_pylist(self.buffer, schema=SCHEMA), row_group_size=ROW_GROUP_ROWS)
            self.buffer = []

    def add_task(self, task: PackTask) -> None:
        self.buffer.append(task_row(task))
        self.rows += 1
        if len(self.buffer) >= ROW_GROUP_ROWS:
            self._flush()

    def finish(self, out: PackOutput) -> None:
        self._flush()  # (with no task at all: a valid Parquet file with the schema and no rows)
        self.writer.close()
        self.parquet.seek(0)
        out.write_file(PARQUET_FILE, self.parquet)
        self.parquet.close()
        out.write_bytes(CARD_FILE, dataset_card(self.pack_info, rows=self.rows).encode())
