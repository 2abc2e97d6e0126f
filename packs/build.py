"""Writing a pack: approved task versions in, one zip out, in every chosen format.

Pure over values (no database): packs.services hands in the submissions as an iterator
of rows read in chunks, and gets back the manifest. Memory does not grow with the
number of tasks: each row becomes a PackTask that every format writer takes and spools
to its own file; a world is rendered once per frozen state and written straight into
the zip; only ids and digests are kept per task. The zip is deterministic (fixed
timestamps and modes, entries in a fixed order), so the same pack always has the same
bytes and sha256.

Any failure raises BuildError with a reason naming the task, the document or the format;
the caller then throws the half-written file away.
"""

import hashlib
import json
import logging
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from tempfile import TemporaryDirectory, TemporaryFile
from typing import BinaryIO

from authoring.archipelago.cache import WorldZipCache, render_world_zip
from core.exceptions import ApplicationError
from packs.formats import ALL_FORMATS, FORMATS, writer_class
from packs.formats.base import FormatWriter
from packs.formats.records import PackTask, PackWorld, input_file_path, task_from_snapshot, world_from_snapshot, world_key

logger = logging.getLogger(__name__)

FORMAT_NAME = "taskwright-pack"
FORMAT_VERSION = 2
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
PROGRESS_EVERY_SECONDS = 0.5  # at most twice a second to the database
COPY_CHUNK = 1024 * 1024
# What a pack built again from the same tasks in another project (after a native import)
# may have different: the database's ids and numbers, when it was built, and each task's
# audit trail (an imported task starts a history of its own).
MAY_DIFFER = ["pack.created_at", "pack.project", "task_id", "task_pk", "submission_id", "version", "rubric_version", "world_id",
              "audit"]


class BuildError(ApplicationError):
    """The build stopped; the message says which task, document or format, for the admin."""


@dataclass
class SubmissionRow:
    """One approved task version as the build reads it (packs.services makes these)."""

    id: int
    number: int
    task: dict  # the snapshot's "task" part
    rubric: dict  # the snapshot's "rubric" part
    world_pk: int
    world_title: str
    world_digest: str  # of the snapshot's "world" part: equal digests, one world state
    pass_threshold: float
    all_must_pass: bool
    judge_samples: int
    difficulty: dict | None = None
    cost: dict | None = None
    # The task's audit trail up to the pack's creation, for manifest.json: [{at, actor, kind,
    # summary, submission}] (reviews.selectors.audit.audit_trails_for_tasks).
    audit: list[dict] = field(default_factory=list)


@dataclass
class BuiltTask:
    """What the database keeps per task of a built pack (packs.models.PackTaskEntry)."""

    submission_id: int
    task: PackTask
    fingerprint: dict  # digests of prompt, reference answer, rubric and the world state


@dataclass
class BuiltWorld:
    world: PackWorld
    world_pk: int
    digest: str
    documents: dict[str, str]  # path → digest of what the document holds


@dataclass
class _Totals:
    tasks: int = 0
    criteria: int = 0
    worlds: int = 0
    task_files: list[str] = field(default_factory=list)  # their paths in the pack
    per_format: dict = field(default_factory=dict)


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ZipOutput:
    """A PackOutput into a zip, keeping the sha256 and size of every file it writes."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.files: list[dict] = []
        self._paths: set[str] = set()

    def _info(self, path: str) -> zipfile.ZipInfo:
        if path in self._paths or path.startswith("/") or any(part in ("", ".", "..") for part in path.split("/")):
            raise BuildError(f"The pack would hold {path!r} twice or outside its folder (a bug: please report it).")
        self._paths.add(path)
        info = zipfile.ZipInfo(path, date_time=ZIP_DATE)
        info.create_system = 3
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_STORED if path.endswith((".zip", ".parquet")) else zipfile.ZIP_DEFLATED
        return info

    def write_bytes(self, path: str, data: bytes) -> None:
        self.archive.writestr(self._info(path), data)
        self.files.append({"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})

    def write_file(self, path: str, source: BinaryIO) -> None:
        self.write_chunks(path, iter(lambda: source.read(COPY_CHUNK), b""))

    def write_chunks(self, path: str, chunks: Iterable[bytes]) -> None:
        sha, size = hashlib.sha256(), 0
        with self.archive.open(self._info(path), "w", force_zip64=True) as target:
            for chunk in chunks:
                sha.update(chunk)
                size += len(chunk)
                target.write(chunk)
        self.files.append({"path": path, "sha256": sha.hexdigest(), "bytes": size})


def _document_digests(documents: Iterable[dict]) -> dict[str, str]:
    return {d["path"]: digest([d.get("kind"), d.get("format"), d.get("content"), d.get("metadata"), d.get("brief"), d.get("status")])
            for d in documents}


def _readme(pack_info: dict, formats: list[str], totals: _Totals) -> bytes:
    lines = [
        f"# {pack_info['name']} — version {pack_info['version']}",
        "",
        f"A Taskwright pack of {totals.tasks} approved task version{'s' if totals.tasks != 1 else ''} "
        f"on {totals.worlds} world{'s' if totals.worlds != 1 else ''}. `manifest.json` lists every file with its sha256.",
        "",
        "| where | what |",
        "|---|---|",
    ]
    if any(writer_class(key).needs_worlds for key in formats):
        lines.append("| `world_files_zipped/<world_id>.zip` | each world in the APEX-Agents / Archipelago layout "
                     "(`filesystem/`, `.apps_data/` with `mail/`, `chat/` and `calendar/`) |")
    where = {
        "apex": (
            "`tasks_and_rubrics.json`, `world_descriptions.json`, `verifiers.json`, `eval_configs.json` "
            "(how verifiers add up to a score)"
        ),
        "healthbench": "`healthbench.jsonl`",
        "inspect": "`inspect/` — run `inspect eval inspect/task.py --model <model> -T judge_model=<model>`",
        "huggingface": "`hf/` — `datasets.load_dataset(\"parquet\", data_files=\"hf/tasks.parquet\")`",
        "taskwright": "`taskwright/` — import it into a Taskwright project (`manage.py import_pack`, or the Packs page)",
    }
    for key in formats:
        lines.append(f"| {where[key]} | {FORMATS[key][2]} |")
    if totals.task_files:
        lines.append("| `task_files/<task_id>/` | each task's own input files, laid over its world's `filesystem/` at the same "
                     "paths (a task file wins over a world file at the same path) |")
    lines.append("")
    return "\n".join(lines).encode()


def build_pack_zip(
    out: BinaryIO,
    *,
    pack_info: dict,
    rows: Iterable[SubmissionRow],
    total: int,
    domain: str,
    formats: list[str] | None = None,
    on_progress: Callable[[int], None] = lambda percent: None,
    on_task: Callable[[BuiltTask], None] = lambda built: None,
    on_world: Callable[[BuiltWorld], None] = lambda built: None,
    world_of: Callable[[int], dict],
    cache: WorldZipCache | None = None,
    open_task_file: Callable[[str], BinaryIO] | None = None,
) -> dict:
    """Write the pack's zip to `out` and return its manifest (without the per-task list,
    which only the zip's manifest.json holds). `open_task_file(sha256)` opens the stored
    bytes of a task's input file (needed when a task has any)."""
    formats = [key for key in ALL_FORMATS if key in set(formats or ALL_FORMATS)]
    if not formats:
        raise BuildError("Choose at least one format.")
    if total == 0:
        raise BuildError("The pack has no approved task version in it.")
    totals = _Totals()
    worlds_by_digest: dict[str, str] = {}  # world state digest → its world_id in the pack
    states: dict[int, int] = {}  # world pk → how many states of it the pack holds
    last_progress = 0.0
    with TemporaryDirectory(prefix="pack-") as spool_dir, TemporaryFile(dir=spool_dir) as task_list, \
            zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        output = ZipOutput(archive)
        writers: list[FormatWriter] = [writer_class(key)(pack_info=pack_info, spool_dir=spool_dir) for key in formats]
        with_worlds = any(w.needs_worlds for w in writers)
        for row in rows:
            label = f"task {row.task['title']!r} (task-{row.task['id']} v{row.number})"
            state = row.world_digest
            world_id = worlds_by_digest.get(state)
            if world_id is None:
                states[row.world_pk] = states.get(row.world_pk, 0) + 1
                world_id = worlds_by_digest[state] = world_key(row.world_pk, states[row.world_pk])
                snapshot_world = world_of(row.id)  # read once per world state
                world = _world_into(output if with_worlds else None, snapshot_world, world_id, label, cache)
                totals.worlds += 1
                on_world(BuiltWorld(world=world, world_pk=row.world_pk, digest=state, documents=_document_digests(world.documents)))
                _each_writer(writers, "add_world", world, label)
                del snapshot_world, world
            task = task_from_snapshot(
                {"task": row.task, "rubric": row.rubric, "world": {"title": row.world_title}}, submission_id=row.id, version=row.number,
                world_id=world_id, domain=domain,
                grading={"pass_threshold": row.pass_threshold, "all_must_pass": row.all_must_pass, "judge_samples": row.judge_samples},
                difficulty=row.difficulty, cost=row.cost,
            )
            if with_worlds:  # (read by the formats that lay them over a world; the others only list them)
                _task_files_into(output, task, open_task_file, label, totals)
            _each_writer(writers, "add_task", task, label)
            totals.tasks += 1
            totals.criteria += len(task.criteria)
            fingerprint = {
                "prompt": digest(task.prompt), "reference_answer": digest(task.reference_answer),
                "rubric": digest([row.rubric["criteria"], row.pass_threshold, row.all_must_pass, row.judge_samples]),
                "world": state, "input_files": digest(list(task.input_files)),
            }
            on_task(BuiltTask(submission_id=row.id, task=task, fingerprint=fingerprint))
            task_list.write(json.dumps({**_manifest_task(task), "audit": row.audit}, ensure_ascii=False, sort_keys=True).encode() + b"\n")
            now = time.monotonic()
            if now - last_progress >= PROGRESS_EVERY_SECONDS:
                last_progress = now
                on_progress(int(90 * totals.tasks / max(total, 1)))
        if totals.tasks == 0:
            raise BuildError("The pack has no approved task version in it.")
        for writer in writers:
            before = len(output.files)
            try:
                writer.finish(output)
            except ApplicationError as exc:
                raise BuildError(f"The pack was not built: the {FORMATS[writer.name][2]} format failed: {exc.message}") from None
            except Exception as exc:
                logger.exception("pack format %s failed", writer.name)
                raise BuildError(
                    f"The pack was not built: the {FORMATS[writer.name][2]} format failed ({type(exc).__name__}: {exc})."
                ) from None
            totals.per_format[writer.name] = [f["path"] for f in output.files[before:]]
        on_progress(95)
        output.write_bytes("README.md", _readme(pack_info, formats, totals))
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "pack": pack_info,
            "formats": formats,
            "counts": {"tasks": totals.tasks, "worlds": totals.worlds, "criteria": totals.criteria},
            "contents": {"worlds": [f["path"] for f in output.files if f["path"].startswith("world_files_zipped/")],
                         "task_files": totals.task_files, **totals.per_format, "readme": ["README.md"]},
            "files": sorted(output.files, key=lambda f: f["path"]),
            "may_differ": MAY_DIFFER,
        }
        task_list.seek(0)
        output.write_chunks("manifest.json", _manifest_chunks(manifest, task_list))
    on_progress(100)
    return manifest


def _world_into(output: ZipOutput | None, snapshot_world: dict, world_id: str, label: str, cache: WorldZipCache | None) -> PackWorld:
    """Render the world state once (or take it from the cache) and put its zip in the pack
    (when a format reads worlds)."""
    world = world_from_snapshot(snapshot_world, world_id=world_id)
    try:
        data, counts = cache.get_or_render(snapshot_world) if cache is not None else render_world_zip(snapshot_world)
    except ApplicationError as exc:
        raise BuildError(
            f"The pack was not built: {label} is on the world {world.title!r}, which cannot be exported. {exc.message}"
        ) from None
    if output is not None:
        output.write_bytes(world.zip_path, data)
    return world_from_snapshot(snapshot_world, world_id=world_id, counts=counts)


def _task_files_into(output: ZipOutput, task: PackTask, open_task_file: Callable[[str], BinaryIO] | None, label: str,
                     totals: _Totals) -> None:
    """The task's input files, streamed from storage into task_files/<task_id>/."""
    for entry in task.input_files:
        path = input_file_path(task.task_id, entry["path"])
        try:
            if open_task_file is None:  # a caller that reads no storage: the bytes are nowhere
                raise FileNotFoundError(entry["sha256"])
            with open_task_file(entry["sha256"]) as source:
                output.write_file(path, source)
        except OSError:
            raise BuildError(f"The pack was not built: {label} has the input file {entry['path']!r}, whose bytes are missing "
                             "from storage.") from None
        if output.files[-1]["sha256"] != entry["sha256"]:
            raise BuildError(f"The pack was not built: {label}'s input file {entry['path']!r} does not match the sha256 it was "
                             "approved with (its stored bytes changed).")
        totals.task_files.append(path)


def _each_writer(writers: list[FormatWriter], method: str, value, label: str) -> None:
    for writer in writers:
        try:
            getattr(writer, method)(value)
        except ApplicationError as exc:
            raise BuildError(f"The pack was not built: {label}: the {FORMATS[writer.name][2]} format failed: {exc.message}") from None
        except Exception as exc:
            logger.exception("pack format %s failed on %s", writer.name, label)
            raise BuildError(f"The pack was not built: {label}: the {FORMATS[writer.name][2]} format failed "
                             f"({type(exc).__name__}: {exc}).") from None


def _manifest_task(task: PackTask) -> dict:
    return {
        "task_id": task.task_id, "task_pk": task.task_pk, "title": task.title, "version": task.version,
        "submission_id": task.submission_id, "rubric_version": task.rubric_version, "world_id": task.world_id,
        "criteria": len(task.criteria), "difficulty": task.difficulty, "cost": task.cost, "input_files": list(task.input_files),
    }


def _manifest_chunks(manifest: dict, task_list: BinaryIO):
    """manifest.json: the manifest, then its "tasks" list streamed from the spool."""
    head = json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2)
    yield (head[: head.rindex("}")].rstrip() + ',\n  "tasks": [').encode()
    first = True
    for line in task_list:
        yield (b"\n    " if first else b",\n    ") + line.rstrip(b"\n")
        first = False
    yield b"\n  ]\n}\n"
