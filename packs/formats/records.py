"""What every pack format is written from: plain, frozen values, one task version at a
time (never the whole pack in memory). The build (packs.build) reads approved submissions
in chunks and turns each snapshot into a PackTask; each world state it meets once becomes
a PackWorld, rendered as `world_files_zipped/<world_id>.zip` (the APEX-Agents /
Archipelago layout, FORMATS.md "World on disk") and shared by every task on it.

Every format writer (apex, healthbench, inspect, huggingface, taskwright) reads only
these values, so the formats cannot disagree about a task.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PackCriterion:
    id: str  # "<task_id>-c<number>": unique in the pack, stable across rebuilds
    number: int  # 1-based, as the author sees it on the rubric
    text: str
    points: int  # negative: a pitfall; "met" then means the bad thing is present
    tag: str  # essential, important, optional, pitfall
    grader_kind: str  # llm_judge or check
    grader_config: dict = field(default_factory=dict)
    explanation: str = ""

    @property
    def is_negative(self) -> bool:
        return self.points < 0


@dataclass(frozen=True)
class PackWorld:
    world_id: str  # "world-<pk>", "world-<pk>-2" for a second frozen state of the same world
    title: str
    outline: str
    facts: tuple[dict, ...]  # ({"key": ..., "value": ...}, ...)
    documents: tuple[dict, ...]  # the snapshot's documents: path, kind, format, brief, metadata, target_size, content, status
    zip_path: str  # "world_files_zipped/<world_id>.zip", relative to the pack's root
    counts: dict = field(default_factory=dict)  # files, emails, chat, events (what the zip holds)


@dataclass(frozen=True)
class PackTask:
    task_id: str  # "task-<pk>": APEX's task_id, HealthBench's prompt_id, Inspect's sample id
    task_pk: int
    version: int  # the submission's number: 1 for the task's first approved version
    submission_id: int
    title: str
    prompt: str
    deliverable_kind: str
    reference_answer: str
    domain: str  # the project's name
    world_id: str
    world_title: str
    rubric_version: int
    criteria: tuple[PackCriterion, ...]
    pass_threshold: float  # a score at or above passes, unless all_must_pass
    all_must_pass: bool
    judge_samples: int
    example_tags: tuple[str, ...] = ()  # the task's taxonomy: "domain:…", "deliverable:…", "world:…"
    difficulty: dict | None = None  # the latest measured {"n", "c", "pass_at_1", "pass_at_k", "k", "band", "batch_id", "model"}
    cost: dict = field(default_factory=dict)  # {"model_usd": float | None, "expert_usd": None}
    # The task's own input files, laid over its world's files at their paths:
    # ({"path", "size", "sha256"}, ...), by path; their bytes are in the pack at input_file_path().
    input_files: tuple[dict, ...] = ()

    @property
    def positive_points(self) -> int:
        return sum(c.points for c in self.criteria if c.points > 0)


def input_file_path(task_id: str, path: str) -> str:
    """Where an input file of the task `task_id` is in the pack (FORMATS.md:
    task_files/<task_id>/): what the writers name and the importer reads back."""
    return f"task_files/{task_id}/{path}"


def score(task: PackTask, met: dict[str, bool]) -> tuple[float, bool]:
    """Taskwright's grade from per-criterion verdicts (`met` by criterion id; a missing one
    is not met): met points / positive points, clipped to [0, 1]; passed by the task's
    threshold or, with all_must_pass, every positive criterion met and no pitfall. The
    same rule as rollouts.grading.scoring, restated over pack values so that every
    format's scorer can be checked against it."""
    met_points = sum(c.points for c in task.criteria if met.get(c.id))
    positive = task.positive_points
    value = max(0.0, min(1.0, met_points / positive)) if positive else 0.0
    if task.all_must_pass:
        passed = all(met.get(c.id) for c in task.criteria if c.points > 0) and not any(met.get(c.id) for c in task.criteria if c.points < 0)
    else:
        passed = value >= task.pass_threshold
    return value, passed


def world_key(world_pk: int, state: int) -> str:
    """The pack's id of a world state: the world's first frozen state in the pack is
    "world-<pk>"; a task version frozen on a later state of the same world gets
    "world-<pk>-2", and so on (a task always runs on the world it was approved with)."""
    return f"world-{world_pk}" if state == 1 else f"world-{world_pk}-{state}"


def world_from_snapshot(snapshot_world: dict, *, world_id: str, counts: dict | None = None) -> PackWorld:
    return PackWorld(
        world_id=world_id,
        title=snapshot_world.get("title") or "",
        outline=snapshot_world.get("outline") or "",
        facts=tuple(snapshot_world.get("facts") or ()),
        documents=tuple(snapshot_world.get("documents") or ()),
        zip_path=f"world_files_zipped/{world_id}.zip",
        counts=dict(counts or {}),
    )


def task_from_snapshot(
    snapshot: dict,
    *,
    submission_id: int,
    version: int,
    world_id: str,
    domain: str,
    grading: dict,
    difficulty: dict | None = None,
    cost: dict | None = None,
) -> PackTask:
    """`grading`: the submitted rubric version's pass_threshold, all_must_pass and
    judge_samples (frozen with it)."""
    task = snapshot["task"]
    task_id = f"task-{task['id']}"
    criteria = tuple(
        PackCriterion(
            id=f"{task_id}-c{number}",
            number=number,
            text=c["text"],
            points=int(c["points"]),
            tag=c.get("tag") or ("pitfall" if int(c["points"]) < 0 else "important"),
            grader_kind=c.get("grader_kind") or "llm_judge",
            grader_config=dict(c.get("grader_config") or {}),
            explanation=c.get("explanation") or "",
        )
        for number, c in enumerate(snapshot["rubric"]["criteria"], start=1)
    )
    deliverable = task.get("deliverable_kind") or "answer"
    return PackTask(
        task_id=task_id,
        task_pk=task["id"],
        version=version,
        submission_id=submission_id,
        title=task["title"],
        prompt=task.get("prompt") or "",
        deliverable_kind=deliverable,
        reference_answer=task.get("reference_answer") or "",
        domain=domain,
        world_id=world_id,
        world_title=snapshot["world"].get("title") or "",
        rubric_version=int(snapshot["rubric"]["version"]),
        criteria=criteria,
        pass_threshold=float(grading["pass_threshold"]),
        all_must_pass=bool(grading["all_must_pass"]),
        judge_samples=int(grading["judge_samples"]),
        example_tags=(f"domain:{domain}", f"deliverable:{deliverable}", f"world:{world_id}"),
        difficulty=difficulty,
        cost=dict(cost or {"model_usd": None, "expert_usd": None}),
        input_files=tuple(
            {"path": f["path"], "size": int(f["size"]), "sha256": f["sha256"]}
            for f in sorted(task.get("input_files") or (), key=lambda f: f["path"])
        ),
    )
