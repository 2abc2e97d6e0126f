"""The Inspect AI format, run with the real inspect_ai package: the demo task is written as
an `inspect/` folder next to its world zip, and `inspect eval inspect/task.py` runs it.

Offline, Inspect's mockllm counts tokens with tiktoken's o200k_base, which tiktoken
downloads on first use: every run here goes through RUNNER, which swaps that estimate for
a length-based one and then calls the real CLI (or inspect_ai.eval) unchanged."""

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
from inspect_ai.log import EvalLog, read_eval_log

from packs.formats import writer_class
from packs.formats.base import DirectoryOutput
from packs.formats.inspect import InspectWriter
from packs.formats.records import PackCriterion, PackTask, score

RUNNER = """\
import sys

import inspect_ai.model._model as model_module

model_module.count_text_tokens = lambda text: max(1, len(text) // 4)  # offline: no tiktoken download
if sys.argv[1] == "cli":
    from inspect_ai._cli.main import main

    sys.argv = ["inspect", *sys.argv[2:]]
    sys.exit(main())
exec(open(sys.argv[2]).read())
"""

# A scripted run through inspect_ai.eval: the agent calls every world tool and submits;
# the judge (the "grader" role) answers per criterion id as `verdicts` says. With
# {"alternate": true} the agent submits at once, a good answer in one run and a bad one in
# the next, and the judge meets every positive criterion of the good one only.
SCRIPTED = """\
import json
import re
import sys

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, get_model

task_file, log_dir, verdicts, epochs = sys.argv[3], sys.argv[4], json.loads(sys.argv[5]), int(sys.argv[6])
samples = [json.loads(line) for line in open(task_file.replace("task.py", "samples.jsonl"))]
criteria = {c["text"]: c for c in samples[0]["metadata"]["criteria"]}
alternate = verdicts.pop("alternate", False)
runs = []
ANSWER = "Northwind may terminate the MSA on 30 days' notice (clause 14.2); Harbour Bank loan is an event of default."


def found(messages, function, pattern):
    for message in messages:
        if message.role == "tool" and message.function == function:
            return re.search(pattern, message.text).group(1)


PLAN = [
    ("list_files", lambda m: {}),
    ("read_file", lambda m: {"path": "/Deal/Letter of intent.docx"}),
    ("read_file", lambda m: {"path": "/Finance/Cap table.xlsx"}),
    ("search_world", lambda m: {"query": "change of control"}),
    ("list_mail", lambda m: {}),
    ("read_mail", lambda m: {"message_id": found(m, "list_mail", r"id: (<[^>]+>)")}),
    ("list_chat", lambda m: {}),
    ("read_chat", lambda m: {"group_id": found(m, "list_chat", r"id: (.+)")}),
    ("list_events", lambda m: {}),
    ("submit", lambda m: {"answer": ANSWER}),
]


def agent(messages, tools, tool_choice, config):
    if alternate:
        runs.append(1)
        answer = "GOOD answer" if len(runs) % 2 else "BAD answer"
        return ModelOutput.for_tool_call(model="mockllm", tool_name="submit", tool_arguments={"answer": answer})
    step = sum(1 for m in messages if m.role == "tool")
    name, arguments = PLAN[min(step, len(PLAN) - 1)]
    return ModelOutput.for_tool_call(model="mockllm", tool_name=name, tool_arguments=arguments(messages))


def judge(messages, tools, tool_choice, config):
    criterion = criteria[messages[-1].text.rsplit("points)\\n", 1)[1]]
    verdict = verdicts.get(criterion["id"], "not met")
    if alternate:
        verdict = "met" if "GOOD answer" in messages[-1].text and criterion["points"] > 0 else "not met"
    if verdict == "malformed":
        return ModelOutput.from_content(model="mockllm", content="I think it is met.")
    reply = json.dumps({"explanation": f"scripted: {verdict}", "criteria_met": verdict == "met"})
    return ModelOutput.from_content(model="mockllm", content=f"```json\\n{reply}\\n```")


logs = inspect_eval(
    task_file,
    model=get_model("mockllm/model", custom_outputs=agent, memoize=False),
    model_roles={"grader": get_model("mockllm/model", custom_outputs=judge, memoize=False)},
    log_dir=log_dir,
    display="none",
    task_args={"epochs": epochs},
)
sys.exit(0 if logs[0].status == "success" else 1)
"""


def build(root: Path, demo, tasks: list[PackTask] | None = None) -> Path:
    """The pack's inspect/ folder, world zips and task input files under `root`, as the pack
    build writes them (an input file a test wrote there already is kept)."""
    from django.core.files.storage import default_storage

    from authoring.services.task_files import task_file_name
    from packs.formats.records import input_file_path

    out = DirectoryOutput(root)
    for world in demo.worlds:
        out.write_bytes(world.zip_path, demo.world_zips[world.world_id])
    for task in tasks or demo.tasks:
        for entry in task.input_files:
            path = input_file_path(task.task_id, entry["path"])
            if not (root / path).exists():
                with default_storage.open(task_file_name(entry["sha256"])) as stored:
                    out.write_bytes(path, stored.read())
    spool = root.parent / f"{root.name}-spool"
    spool.mkdir()
    writer = InspectWriter(pack_info={"name": "Demo pack", "version": 1}, spool_dir=str(spool))
    for world in demo.worlds:
        writer.add_world(world)
    for task in tasks or demo.tasks:
        writer.add_task(task)
    writer.finish(out)
    return root


def run(pack: Path, log_dir: Path, *args: str) -> EvalLog:
    runner = pack.parent / "runner.py"
    runner.write_text(RUNNER)
    env = {**os.environ, "INSPECT_LOG_DIR": str(log_dir), "NO_COLOR": "1", "INSPECT_DISPLAY": "none"}
    result = subprocess.run([sys.executable, str(runner), *args], cwd=pack, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (log,) = log_dir.glob("*.eval")
    return read_eval_log(str(log))


def cli(pack: Path, log_dir: Path, *task_args: str) -> EvalLog:
    return run(pack, log_dir, "cli", "eval", "inspect/task.py", "--model", "mockllm/model", "--log-dir", str(log_dir), *task_args)


def load_template(pack: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"pack_{name}", pack / "inspect" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_folder_holds_the_template_and_one_sample_per_task_version(demo_pack, tmp_path):
    task = demo_pack.tasks[0]
    pack = build(tmp_path / "pack", demo_pack, [task, dataclasses.replace(task, version=2, submission_id=99)])
    assert writer_class("inspect") is InspectWriter and InspectWriter.needs_worlds
    assert sorted(p.name for p in (pack / "inspect").iterdir()) == [
        "pack.json",
        "rubric_grading.py",
        "samples.jsonl",
        "task.py",
        "world_tools.py",
    ]
    templates = Path(__file__).resolve().parents[2] / "packs" / "formats" / "inspect_files"
    assert (pack / "inspect" / "task.py").read_bytes() == (templates / "task.py").read_bytes()  # copied verbatim
    first, second = (json.loads(line) for line in (pack / "inspect" / "samples.jsonl").read_text().splitlines())
    assert (first["id"], second["id"]) == (task.task_id, f"{task.task_id}-v2")
    assert first["input"] == task.prompt and first["target"] == task.reference_answer
    meta = first["metadata"]
    assert (meta["world_id"], meta["pass_threshold"], meta["all_must_pass"]) == (task.world_id, task.pass_threshold, task.all_must_pass)
    assert [(c["id"], c["number"], c["points"], c["tag"], c["grader_kind"]) for c in meta["criteria"]] == [
        (c.id, c.number, c.points, c.tag, c.grader_kind) for c in task.criteria
    ]
    assert meta["criteria"][0]["text"] == task.criteria[0].text and "grader_config" in meta["criteria"][0]
    checklist = "Inputs/Acme change-of-control checklist.md"  # the demo task's input file
    assert first["files"] == {
        "world.zip": f"../world_files_zipped/{task.world_id}.zip",
        f"task_files/{checklist}": f"../task_files/{task.task_id}/{checklist}",
        "task_files.json": json.dumps([checklist]),
    }
    assert (pack / "inspect" / first["files"]["world.zip"]).resolve().read_bytes() == demo_pack.world_zips[task.world_id]
    # The shipped code imports only inspect_ai and the standard library.
    for name in ("task.py", "world_tools.py", "rubric_grading.py"):
        imports = {
            line.split()[1].split(".")[0]
            for line in (pack / "inspect" / name).read_text().splitlines()
            if line.startswith(("import ", "from "))
        }
        assert imports <= {"inspect_ai", "rubric_grading", "world_tools", *sys.stdlib_module_names}, (name, imports)


def test_inspect_eval_with_mockllm_runs_and_scores_nothing_met(demo_pack, tmp_path):
    task = demo_pack.tasks[0]
    pack = build(tmp_path / "pack", demo_pack, [task, dataclasses.replace(task, version=2, submission_id=99)])
    log = cli(pack, tmp_path / "logs", "-T", "judge_model=mockllm/model")
    assert log.status == "success"
    assert sorted(s.id for s in log.samples) == [task.task_id, f"{task.task_id}-v2"]
    sample = log.samples[0]
    rubric = sample.scores["rubric_scorer"]
    # mockllm's judge answer is no JSON verdict: every criterion not met, recorded as malformed.
    assert rubric.value == {"score": 0.0, "passed": 0.0}
    assert rubric.metadata["malformed"] == [c.id for c in task.criteria]
    assert all(v["met"] is False and v["malformed"] for v in rubric.metadata["verdicts"])
    assert "malformed judge answers (counted as not met)" in rubric.explanation
    assert rubric.metadata["judge_model"] == "mockllm/model"
    # The agent ended on its own: mockllm never calls a tool, is reminded once, and its reply is the answer.
    assert [m.role for m in sample.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert rubric.answer == "Default output from mockllm/model"
    means = {(s.name, s.reducer): s.metrics["mean"].value for s in log.results.scores}
    assert means[("score", "mean")] == 0.0 and means[("passed", "mean")] == 0.0


def test_epochs_report_pass_at_k(demo_pack, tmp_path):
    task_id = demo_pack.tasks[0].task_id
    pack = build(tmp_path / "pack", demo_pack)
    log = cli(pack, tmp_path / "logs", "-T", "judge_model=mockllm/model", "-T", "epochs=2")
    assert log.status == "success"
    assert log.eval.config.epochs == 2
    assert sorted((s.id, s.epoch) for s in log.samples) == [(task_id, 1), (task_id, 2)]
    reported = {(s.name, s.reducer): s.metrics["mean"].value for s in log.results.scores}
    for reducer in ("mean", "pass_at_1", "pass_at_2", "pass_k_2"):
        assert reported[("passed", reducer)] == 0.0 and reported[("score", reducer)] == 0.0


VERDICTS = {1: "met", 2: "malformed", 3: "met", 6: "met"}  # by criterion number; the rest "not met"


def test_scripted_agent_reads_the_world_and_the_judge_grades_as_taskwright(demo_pack, tmp_path):
    task = demo_pack.tasks[0]
    check = PackCriterion(id=f"{task.task_id}-c7", number=7, text="Names Northwind.", points=3, tag="important", grader_kind="check",
                          grader_config={"check": "contains", "value": "northwind"})
    task = dataclasses.replace(task, criteria=(*task.criteria, check))
    pack = build(tmp_path / "pack", demo_pack, [task])
    scripted = tmp_path / "scripted.py"
    scripted.write_text(SCRIPTED)
    verdicts = {f"{task.task_id}-c{number}": verdict for number, verdict in VERDICTS.items()}
    log = run(pack, tmp_path / "logs", "script", str(scripted), "inspect/task.py", str(tmp_path / "logs"), json.dumps(verdicts), "1")
    assert log.status == "success"
    (sample,) = log.samples
    results = {m.function: m.text for m in sample.messages if m.role == "tool"}
    assert "/Deal/Letter of intent.docx" in results["list_files"] and "/Finance/Cap table.xlsx" in results["list_files"]
    assert "LETTER OF INTENT — PROJECT LIGHTHOUSE" in [m.text for m in sample.messages if m.role == "tool"][1]
    assert "file /Deal/SPA draft v1.docx" in results["search_world"]
    assert "Subject: RE: Lighthouse — Northwind MSA" in results["list_mail"].replace("subject:", "Subject:")
    assert "38% of our FY2025 revenue" in results["read_mail"]
    assert "project-lighthouse" in results["list_chat"] and "Reading office lease" in results["read_chat"]
    assert "weekly diligence call" in results["list_events"] and "Priya Raman <p.raman@harlowfinch.com>" in results["list_events"]
    rubric = sample.scores["rubric_scorer"]
    met = {cid: verdict == "met" for cid, verdict in verdicts.items()} | {check.id: True}
    value, passed = score(task, met)
    assert rubric.value == {"score": value, "passed": 1.0 if passed else 0.0}
    assert value == pytest.approx((10 + 4 - 6 + 3) / 31)
    graded = {v["number"]: v for v in rubric.metadata["verdicts"]}
    assert graded[2]["met"] is False and graded[2]["malformed"]
    assert rubric.metadata["malformed"] == [f"{task.task_id}-c2"]
    assert graded[7]["grader"] == "check" and graded[7]["met"]
    assert graded[1]["explanation"] == "scripted: met" and graded[6]["met"]
    assert rubric.answer.startswith("Northwind may terminate")


def test_the_shipped_aggregation_is_taskwrights(demo_pack, tmp_path):
    pack = build(tmp_path / "pack", demo_pack)
    grading = load_template(pack, "rubric_grading")
    base = demo_pack.tasks[0]
    ids = {c.number: c.id for c in base.criteria}  # 1-5 positive (10, 8, 4, 4, 2), 6 the pitfall (-6)
    patterns = [
        {},
        dict.fromkeys(ids.values(), True),  # the pitfall too: 22 of 28, not every-must-pass
        {ids[n]: True for n in range(1, 6)},  # every positive, no pitfall
        {ids[1]: True, ids[2]: True},  # 18/28 below 0.7
        {ids[1]: True, ids[2]: True, ids[3]: True},  # 22/28 above 0.7
        {ids[6]: True},  # only the pitfall: clipped at 0
        {ids[1]: True, ids[2]: True, ids[3]: True, ids[4]: False, ids[5]: False, ids[6]: True},
    ]
    for task in (base, dataclasses.replace(base, all_must_pass=True), dataclasses.replace(base, pass_threshold=0.5)):
        criteria = json.loads((pack / "inspect" / "samples.jsonl").read_text())["metadata"]["criteria"]
        for met in patterns:
            got = grading.aggregate(criteria, met, pass_threshold=task.pass_threshold, all_must_pass=task.all_must_pass)
            assert (got["score"], got["passed"]) == score(task, met), (task.all_must_pass, task.pass_threshold, met)
    assert grading.aggregate([], {}, pass_threshold=0.5, all_must_pass=False)["score"] == 0.0


@pytest.mark.parametrize(("reply", "met"), [
    ('{"explanation": "ok", "criteria_met": true}', True),
    ('Sure.\n```json\n{"explanation": "no", "criteria_met": false}\n```', False),
    ('{"explanation": "ok", "criteria_met": "true"}', None),  # not a boolean
    ('{"criteria_met": true}', None),  # no explanation
    ("Default output from mockllm/model", None),
    ("", None),
])
def test_a_malformed_judge_answer_is_never_met(tmp_path, reply, met):
    grading = load_template(build_templates_only(tmp_path), "rubric_grading")
    assert grading.parse_verdict(reply)[0] is met
    assert grading.majority([grading.parse_verdict(reply)[0]]) is bool(met)


def build_templates_only(tmp_path: Path) -> Path:
    writer = InspectWriter(pack_info={"name": "Empty", "version": 1}, spool_dir=str(tmp_path))
    writer.finish(DirectoryOutput(tmp_path / "pack"))
    return tmp_path / "pack"


def test_checks_and_file_readers(demo_pack, tmp_path):
    pack = build(tmp_path / "pack", demo_pack)
    grading = load_template(pack, "rubric_grading")
    assert grading.run_check({"check": "numeric", "value": 3.15e6, "tolerance": 1}, "£3.15m outstanding")[0]
    assert grading.run_check({"check": "regex", "pattern": "clause\\s+14\\.2", "flags": "i"}, "CLAUSE 14.2")[0]
    assert not grading.run_check({"check": "not_contains", "value": "automatically"}, "ends automatically")[0]
    assert grading.run_check({"check": "file_exists", "path": "/memo.docx"}, "anything")[0] is False  # read-only: nothing written
    with pytest.raises(grading.CheckError):
        grading.run_check({"check": "contains"}, "x")
    # Without world.json the tools read Office files themselves.
    tools = load_template(pack, "world_tools")
    archive = zipfile.ZipFile(BytesIO(demo_pack.world_zips[demo_pack.worlds[0].world_id]))
    assert "LETTER OF INTENT — PROJECT LIGHTHOUSE" in tools.docx_text(archive.read("filesystem/Deal/Letter of intent.docx"))
    sheet = tools.xlsx_text(archive.read("filesystem/Finance/Cap table.xlsx"))
    assert sheet.startswith("## Sheet: Cap table") and "A1=Holder" in sheet
    assert (
        tools.pdf_text(b"%PDF-1.4\n1 0 obj\n<< /Length 40 >>\nstream\nBT /F1 12 Tf (Hello \\(PDF\\)) Tj ET\nendstream\nendobj\n")
        == "Hello (PDF)"
    )


def test_pass_at_k_over_epochs_counts_the_runs_that_passed(demo_pack, tmp_path):
    pack = build(tmp_path / "pack", demo_pack)
    scripted = tmp_path / "scripted.py"
    scripted.write_text(SCRIPTED)
    log = run(pack, tmp_path / "logs", "script", str(scripted), "inspect/task.py", str(tmp_path / "logs"), '{"alternate": true}', "2")
    assert log.status == "success"
    assert sorted(s.scores["rubric_scorer"].value["passed"] for s in log.samples) == [0.0, 1.0]  # one run passed, one did not
    reported = {(s.name, s.reducer): s.metrics["mean"].value for s in log.results.scores}
    assert reported[("passed", "mean")] == 0.5 and reported[("score", "mean")] == 0.5
    assert reported[("passed", "pass_at_1")] == 0.5  # pass@1
    assert reported[("passed", "pass_at_2")] == 1.0  # pass@2: at least one of the two runs passed
    assert reported[("passed", "pass_k_2")] == 0.0  # pass^2: not both


def test_the_sample_gets_the_tasks_input_files_and_the_agents_tools_read_them(demo_pack, tmp_path):
    import hashlib

    from packs.formats.records import input_file_path

    figures = b"quarter,revenue\nQ1,120\nQ2,135\n"
    task = dataclasses.replace(demo_pack.tasks[0], input_files=(
        {"path": "Inputs/figures.csv", "size": len(figures), "sha256": hashlib.sha256(figures).hexdigest()},
    ))
    root = tmp_path / "pack"
    DirectoryOutput(root).write_bytes(input_file_path(task.task_id, "Inputs/figures.csv"), figures)
    pack = build(root, demo_pack, [task])
    plan = '("list_files", lambda m: {}),\n    ("read_file", lambda m: {"path": "/Inputs/figures.csv"}),'
    scripted = tmp_path / "scripted.py"
    scripted.write_text(SCRIPTED.replace('("list_files", lambda m: {}),', plan, 1))
    log = run(pack, tmp_path / "logs", "script", str(scripted), "inspect/task.py", str(tmp_path / "logs"), "{}", "1")
    assert log.status == "success"
    (sample,) = log.samples
    tool_texts = [m.text for m in sample.messages if m.role == "tool"]
    assert "/Inputs/figures.csv" in tool_texts[0] and "/Deal/Letter of intent.docx" in tool_texts[0]  # laid over the world
    assert "Q2,135" in tool_texts[1]
    line = json.loads((pack / "inspect" / "samples.jsonl").read_text().splitlines()[0])
    assert line["files"]["task_files/Inputs/figures.csv"] == f"../task_files/{task.task_id}/Inputs/figures.csv"
