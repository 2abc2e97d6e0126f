"""Reading a Taskwright pack back (its `taskwright/` format), checked whole before
anything is stored: the archive's safety (core.archives.check_zip), that it is ours, that
every file the manifest lists is there with its sha256, and that every task's world is
in the pack. packs.services.pack_import then stores it in one transaction.
"""

import hashlib
import json
import zipfile
from dataclasses import dataclass
from typing import BinaryIO

from core.archives import check_zip, safe_member_read
from core.exceptions import ApplicationError
from packs.build import FORMAT_NAME, FORMAT_VERSION
from packs.formats.records import input_file_path
from packs.formats.taskwright import NATIVE_VERSION

MIB = 1024 * 1024
ARCHIVE_LIMITS = {"max_entries": 20_000, "max_total_bytes": 4096 * MIB, "max_entry_bytes": 1024 * MIB, "max_ratio": 200}
MAX_JSON_BYTES = 256 * MIB
MAX_WORLD_ZIP_BYTES = 300 * MIB  # as for a world zip uploaded on its own


@dataclass
class ImportedPackWorld:
    world_id: str
    title: str
    outline: str
    facts: list
    zip_name: str  # the entry holding the world's zip


@dataclass
class ImportedPack:
    name: str
    version: int
    worlds: list[ImportedPackWorld]
    tasks: list[dict]  # taskwright/tasks.jsonl lines
    manifest_sha256: str = ""  # of manifest.json's bytes: which pack this is, whatever the zip's name


def _refuse(reason: str) -> ApplicationError:
    return ApplicationError(f"This file cannot be imported: {reason} Nothing was imported.")


def _jsonl(data: bytes, path: str) -> list[dict]:
    rows = []
    for n, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise _refuse(f"line {n} of {path} is not valid JSON.") from None
        if not isinstance(row, dict) or row.get("taskwright_native") != NATIVE_VERSION:
            raise _refuse(f"line {n} of {path} is not in Taskwright's pack format (version {NATIVE_VERSION}).")
        rows.append(row)
    return rows


def _input_files(task: dict, n: int) -> list[dict]:
    entries = task.get("input_files") or []
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("sha256"), str) for e in entries
    ):
        raise _refuse(f"task {n} ({task.get('title')!r}) lists its input files in a form this Taskwright does not read.")
    return entries


def read_pack(source: BinaryIO) -> tuple[ImportedPack, zipfile.ZipFile]:
    """The pack in `source` and its open archive (for the world zips), or ApplicationError."""
    try:
        entries = check_zip(source, **ARCHIVE_LIMITS)
    except ApplicationError as exc:
        raise _refuse(exc.message) from None
    names = {info.filename for info in entries}
    if "manifest.json" not in names:
        raise _refuse("it is not a Taskwright pack (no manifest.json at its top).")
    source.seek(0)
    archive = zipfile.ZipFile(source)
    try:
        manifest_bytes = safe_member_read(archive, "manifest.json", MAX_JSON_BYTES)
        manifest = json.loads(manifest_bytes)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _refuse("its manifest.json is not valid JSON.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise _refuse("it is not a Taskwright pack (its manifest names another format).")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise _refuse(
            f"it is a Taskwright pack of format version {manifest.get('format_version')}; this Taskwright reads version {FORMAT_VERSION}."
        )
    if "taskwright" not in (manifest.get("formats") or []):
        whole = manifest.get("subset_of") if isinstance(manifest.get("subset_of"), dict) else None
        if whole is not None and "taskwright" in (whole.get("formats") or []):
            raise _refuse(f"it is the download of one format ({', '.join(manifest.get('formats') or [])}) of a pack; an import reads "
                          "Taskwright's own format: download the whole pack, or its \"Taskwright's own format\" part, and import that.")
        raise _refuse("the pack was built without Taskwright's own format, which is what an import reads; build it again with that format.")
    listed = {f.get("path"): f for f in manifest.get("files") or [] if isinstance(f, dict)}
    missing = sorted(p for p in listed if p not in names)
    if missing:
        raise _refuse(f"it is incomplete: {len(missing)} file(s) the manifest lists are missing (first: {missing[0]}).")
    unlisted = sorted(n for n in names - set(listed) - {"manifest.json"} if not n.endswith("/"))
    if unlisted:
        raise _refuse(f"it holds a file its manifest does not list ({unlisted[0]}).")
    for path, entry in sorted(listed.items()):
        sha, size = hashlib.sha256(), 0
        with archive.open(path) as member:
            for chunk in iter(lambda m=member: m.read(MIB), b""):
                sha.update(chunk)
                size += len(chunk)
        if sha.hexdigest() != entry.get("sha256") or size != entry.get("bytes"):
            raise _refuse(f"{path} does not match the sha256 in its manifest: the pack was changed or damaged.")
    worlds = [
        ImportedPackWorld(world_id=str(row.get("world_id")), title=str(row.get("title") or ""), outline=str(row.get("outline") or ""),
                          facts=list(row.get("facts") or []), zip_name=str(row.get("zip") or ""))
        for row in _jsonl(safe_member_read(archive, "taskwright/worlds.jsonl", MAX_JSON_BYTES), "taskwright/worlds.jsonl")
    ]
    by_id = {w.world_id: w for w in worlds}
    for world in worlds:
        if world.zip_name not in listed:
            raise _refuse(f"the world {world.world_id} has no zip in the pack.")
    tasks = _jsonl(safe_member_read(archive, "taskwright/tasks.jsonl", MAX_JSON_BYTES), "taskwright/tasks.jsonl")
    for n, task in enumerate(tasks, start=1):
        if task.get("world_id") not in by_id:
            raise _refuse(f"task {n} ({task.get('title')!r}) is on a world the pack does not hold.")
        rubric = task.get("rubric")
        if not isinstance(rubric, dict) or not isinstance(rubric.get("criteria"), list):
            raise _refuse(f"task {n} ({task.get('title')!r}) has no rubric.")
        for entry in _input_files(task, n):
            held = listed.get(input_file_path(str(task.get("task_id")), entry["path"]))
            if held is None or held.get("sha256") != entry["sha256"]:
                raise _refuse(f"task {n} ({task.get('title')!r}) has the input file {entry['path']!r}, which is not in the pack.")
    pack = manifest.get("pack") or {}
    return ImportedPack(name=str(pack.get("name") or ""), version=int(pack.get("version") or 0), worlds=worlds, tasks=tasks,
                        manifest_sha256=hashlib.sha256(manifest_bytes).hexdigest()), archive
