"""Pack file formats. For now our own importable format:

    tasks.jsonl                  one line per approved task version, with its rubric
    worlds/<world_id>.json       the world: outline, facts and every document's content
    manifest.json                what is inside, with sha256 and size of every file

The zip is deterministic (fixed timestamps, sorted entries): the same pack builds to the
same bytes, so a rebuilt pack has the same sha256.
"""

import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable
from typing import IO

FORMAT_NAME = "taskwright-pack"
FORMAT_VERSION = 1
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2).encode()


def task_line(snapshot: dict, *, submission_id: int, version: int) -> dict:
    task = snapshot["task"]
    return {
        "task_id": task["id"],
        "task_version": version,
        "submission_id": submission_id,
        "title": task["title"],
        "prompt": task["prompt"],
        "deliverable_kind": task["deliverable_kind"],
        "reference_answer": task["reference_answer"],
        "world_id": snapshot["world"]["id"],
        "rubric": snapshot["rubric"],
    }


def build_taskwright_pack(
    out: IO[bytes], *, pack_info: dict, submissions: Iterable[dict], on_progress: Callable[[int], None] = lambda p: None
) -> dict:
    """Write the zip to `out`; return the manifest. `submissions` yields dicts with
    id, number and snapshot, in a stable order."""
    submissions = list(submissions)
    files: dict[str, bytes] = {}
    lines = []
    for i, sub in enumerate(submissions, start=1):
        snapshot = sub["snapshot"]
        lines.append(json.dumps(task_line(snapshot, submission_id=sub["id"], version=sub["number"]), ensure_ascii=False, sort_keys=True))
        world = snapshot["world"]
        # Two task versions on one world share the world file; the newest snapshot wins.
        files[f"worlds/{world['id']}.json"] = _json_bytes(world)
        on_progress(int(80 * i / max(len(submissions), 1)))
    files["tasks.jsonl"] = ("\n".join(lines) + "\n").encode() if lines else b""
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "pack": pack_info,
        "task_count": len(submissions),
        "files": [
            {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for path, data in sorted(files.items())
        ],
    }
    files["manifest.json"] = _json_bytes(manifest)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    on_progress(100)
    return manifest
