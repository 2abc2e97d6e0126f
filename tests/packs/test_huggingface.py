"""hf/: read by the `datasets` library and by pyarrow, as someone who downloads the pack would."""

from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from packs.formats.huggingface import HuggingFaceWriter
from tests.packs.helpers import PACK_INFO, write_pack


@pytest.fixture
def load_dataset(monkeypatch, tmp_path):
    """datasets.load_dataset over local Parquet files, with no network and a cache of the test's own."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)  # (read from the environment at import)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)

    def load(path):
        return datasets.load_dataset("parquet", data_files={"train": str(path)}, cache_dir=str(tmp_path / "hf-cache"), split="train")

    return load


def card_header(pack) -> tuple[dict, str]:
    text = (pack / "hf" / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def test_load_dataset_reads_typed_columns_and_the_task(demo_pack, tmp_path, load_dataset):
    from datasets import Features, List, Value

    task = replace(demo_pack.tasks[0],
                   difficulty={"n": 8, "c": 3, "pass_at_1": 0.375, "pass_at_k": 0.9, "k": 4, "band": "hard", "batch_id": 1,
                               "model": "gpt-test"},
                   cost={"model_usd": 1.25, "expert_usd": None},
                   input_files=({"path": "Inputs/figures.csv", "size": 12, "sha256": "ab" * 32},))
    pack = write_pack(HuggingFaceWriter, tmp_path, tasks=[task, demo_pack.tasks[0]], worlds=demo_pack.worlds)
    tasks = load_dataset(pack / "hf" / "tasks.parquet")

    rubric_item = {"id": Value("string"), "criterion": Value("string"), "points": Value("int32"), "tags": List(Value("string")),
                   "kind": Value("string")}
    assert tasks.features == Features({
        "task_id": Value("string"), "task_version": Value("int32"), "submission_id": Value("int64"), "title": Value("string"),
        "domain": Value("string"), "world_id": Value("string"), "world_title": Value("string"), "prompt": Value("string"),
        "reference_answer": Value("string"), "deliverable_kind": Value("string"), "rubric_version": Value("int32"),
        "pass_threshold": Value("float64"), "all_must_pass": Value("bool"), "judge_samples": Value("int32"),
        "positive_points": Value("int32"), "rubric": List(rubric_item), "example_tags": List(Value("string")),
        "input_files": List({"path": Value("string"), "size": Value("int64"), "sha256": Value("string")}),
        "difficulty_pass_at_1": Value("float64"), "difficulty_pass_at_k": Value("float64"), "difficulty_k": Value("int32"),
        "difficulty_n": Value("int32"), "difficulty_band": Value("string"), "difficulty_model": Value("string"),
        "cost_model_usd": Value("float64"),
    })
    assert tasks.num_rows == 2
    row, unmeasured = tasks[0], tasks[1]
    assert row["task_id"] == task.task_id and row["task_version"] == 1 and row["submission_id"] == demo_pack.submission.pk
    assert row["title"] == "Identify the change-of-control risks" and row["domain"] == "Corporate law — M&A"
    assert (row["world_id"], row["world_title"]) == (demo_pack.worlds[0].world_id, "Acme acquires Beta")
    assert row["prompt"] == demo_pack.env_task.prompt and row["reference_answer"] == demo_pack.env_task.reference_answer
    assert (row["deliverable_kind"], row["rubric_version"], row["pass_threshold"], row["all_must_pass"]) == ("answer", 1, 0.7, False)
    assert (row["judge_samples"], row["positive_points"]) == (1, 28)
    assert [(c["points"], c["tags"], c["kind"]) for c in row["rubric"]] == [
        (10, ["essential"], "llm_judge"), (8, ["essential"], "llm_judge"), (4, ["important"], "llm_judge"),
        (4, ["important"], "llm_judge"), (2, ["optional"], "llm_judge"), (-6, ["pitfall"], "llm_judge"),
    ]
    assert row["rubric"][0] == {"id": f"{task.task_id}-c1", "criterion": task.criteria[0].text, "points": 10, "tags": ["essential"],
                                "kind": "llm_judge"}
    assert row["example_tags"] == list(task.example_tags)
    assert row["input_files"] == [{"path": "Inputs/figures.csv", "size": 12, "sha256": "ab" * 32}]
    assert unmeasured["input_files"] == [dict(f) for f in demo_pack.tasks[0].input_files]  # the demo task's checklist
    assert (row["difficulty_pass_at_1"], row["difficulty_pass_at_k"], row["difficulty_k"], row["difficulty_n"]) == (0.375, 0.9, 4, 8)
    assert (row["difficulty_band"], row["difficulty_model"], row["cost_model_usd"]) == ("hard", "gpt-test", 1.25)
    assert [unmeasured[c] for c in ("difficulty_pass_at_1", "difficulty_k", "difficulty_band", "difficulty_model", "cost_model_usd")] == \
        [None] * 5


def test_pyarrow_reads_the_explicit_schema(demo_pack, tmp_path):
    pack = write_pack(HuggingFaceWriter, tmp_path, tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    schema = pq.read_schema(pack / "hf" / "tasks.parquet")
    assert schema.names[:3] == ["task_id", "task_version", "submission_id"]
    assert schema.field("task_version").type == pa.int32() and schema.field("pass_threshold").type == pa.float64()
    assert schema.field("all_must_pass").type == pa.bool_() and schema.field("example_tags").type == pa.list_(pa.string())
    rubric = schema.field("rubric").type
    assert pa.types.is_list(rubric) and pa.types.is_struct(rubric.value_type)
    item = {f.name: f.type for f in rubric.value_type}
    assert list(item) == ["id", "criterion", "points", "tags", "kind"]
    assert (item["id"], item["criterion"], item["points"], item["kind"]) == (pa.string(), pa.string(), pa.int32(), pa.string())
    assert pa.types.is_list(item["tags"]) and item["tags"].value_type == pa.string()
    assert not any(f.nullable for f in rubric.value_type)
    assert not schema.field("task_id").nullable and not schema.field("rubric").nullable
    assert all(schema.field(name).nullable for name in schema.names if name.startswith(("difficulty_", "cost_")))
    table = pq.read_table(pack / "hf" / "tasks.parquet")
    assert table.column("task_id").to_pylist() == [demo_pack.tasks[0].task_id]
    assert table.column("rubric").to_pylist()[0][5]["points"] == -6
    again = write_pack(HuggingFaceWriter, tmp_path / "again", tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    assert (again / "hf" / "tasks.parquet").read_bytes() == (pack / "hf" / "tasks.parquet").read_bytes()  # the pack's sha256 is stable


def test_the_card_names_the_config_and_split_and_says_how_to_score(demo_pack, tmp_path):
    pack = write_pack(HuggingFaceWriter, tmp_path, tasks=demo_pack.tasks, worlds=demo_pack.worlds)
    header, body = card_header(pack)
    assert header["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "tasks.parquet"}]}]
    for config in header["configs"]:
        for files in config["data_files"]:
            assert (pack / "hf" / files["path"]).is_file()
    assert header["pretty_name"] == PACK_INFO["name"] and "license" not in header
    assert "# Lighthouse — demo pack" in body and "version **1.2**" in body and "1 task version," in body
    assert "Set by the publisher." in body
    assert "`positive_points`" in body and "clipped to [0, 1]" in body and "`all_must_pass`" in body
    for column in pq.read_schema(pack / "hf" / "tasks.parquet").names:
        assert f"- `{column}` (" in body, column


def test_twelve_hundred_tasks_go_out_in_row_groups_and_all_come_back(demo_pack, tmp_path, load_dataset):
    base = demo_pack.tasks[0]
    tasks = (replace(base, task_id=f"task-{n}", task_pk=n, submission_id=10_000 + n, title=f"Task {n}",
                     criteria=tuple(replace(c, id=f"task-{n}-c{c.number}") for c in base.criteria)) for n in range(1, 1201))
    pack = write_pack(HuggingFaceWriter, tmp_path, tasks=tasks, worlds=demo_pack.worlds)
    parquet = pack / "hf" / "tasks.parquet"
    metadata = pq.ParquetFile(parquet).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [500, 500, 200]
    loaded = load_dataset(parquet)
    assert loaded.num_rows == 1200
    assert loaded["task_id"] == [f"task-{n}" for n in range(1, 1201)]
    assert loaded["submission_id"] == [10_000 + n for n in range(1, 1201)]
    assert loaded[1199]["rubric"][5]["id"] == "task-1200-c6"
    assert card_header(pack)[0]["size_categories"] == ["1K<n<10K"]


def test_no_task_still_writes_a_readable_table(tmp_path):
    pack = write_pack(HuggingFaceWriter, tmp_path, tasks=[])
    table = pq.read_table(pack / "hf" / "tasks.parquet")
    assert table.num_rows == 0 and "rubric" in table.schema.names
    assert "0 task versions" in card_header(pack)[1]
