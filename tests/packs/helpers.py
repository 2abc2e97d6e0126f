"""Feeding format writers as the pack build does, for the format tests."""

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from packs.formats.base import DirectoryOutput, FormatWriter
from packs.formats.records import PackTask, PackWorld

PACK_INFO = {"name": "Lighthouse — demo pack", "version": "1.2", "project": "corporate-law-ma", "created_at": "2026-03-05T10:00:00+00:00"}

# Verdict patterns over the demo rubric, by criterion number: 1 (+10, essential), 2 (+8,
# essential), 3 (+4), 4 (+4), 5 (+2, optional), 6 (-6, pitfall). Positive points: 28.
VERDICT_PATTERNS = {
    "all positives met": {1, 2, 3, 4, 5},
    "all positives and the pitfall": {1, 2, 3, 4, 5, 6},
    "essentials only": {1, 2},
    "essentials and the pitfall": {1, 2, 6},
    "half the points": {1, 4},  # 14 / 28 = 0.5: on the threshold of the 0.5 variant
    "only the pitfall": {6},  # -6 / 28, clipped to 0
    "nothing": set(),
}


def grading_variants(task: PackTask) -> dict[str, PackTask]:
    """The demo task under each pass rule: its own threshold (0.7), a threshold a pattern
    lands on exactly, and all-must-pass."""
    return {
        "threshold": task,
        "threshold 0.5": replace(task, pass_threshold=0.5),
        "all must pass": replace(task, all_must_pass=True, pass_threshold=0.1),
    }


def met_by_id(task: PackTask, numbers: set[int]) -> dict[str, bool]:
    """Verdicts by PackCriterion id; criteria left out are 'not met' by being absent."""
    return {c.id: True for c in task.criteria if c.number in numbers}


def write_pack(writer_class: type[FormatWriter], root: Path, *, tasks: Iterable[PackTask], worlds: Iterable[PackWorld] = (),
               pack_info: dict | None = None) -> Path:
    """Run a writer over the tasks as the build does (each world once, before its first
    task) into `root`/pack; return that folder. The spool goes to `root`/spool."""
    spool, out = root / "spool", root / "pack"
    spool.mkdir(parents=True, exist_ok=True)
    writer = writer_class(pack_info=pack_info or PACK_INFO, spool_dir=str(spool))
    by_id = {world.world_id: world for world in worlds}
    added: set[str] = set()
    for task in tasks:
        if task.world_id not in added:
            writer.add_world(by_id[task.world_id])
            added.add(task.world_id)
        writer.add_task(task)
    writer.finish(DirectoryOutput(out))
    return out
