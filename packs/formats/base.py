"""The contract between the pack build and its formats.

A format writer is fed every world state once (`add_world`, before the first task on
it) and every task version once (`add_task`), in the pack's order, and then writes its
files (`finish`). Between the calls it keeps at most one task in memory: anything that
grows with the pack goes to a spool file under `spool_dir` (a temporary folder the
build removes). Paths given to the output are relative to the pack's root, with "/".
"""

import os
import shutil
from pathlib import Path
from typing import BinaryIO, ClassVar, Protocol

from packs.formats.records import PackTask, PackWorld


class PackOutput(Protocol):
    def write_bytes(self, path: str, data: bytes) -> None: ...

    def write_file(self, path: str, source: BinaryIO) -> None:
        """Copy `source` (read from its current position to its end) into `path`."""


class FormatWriter:
    name: ClassVar[str]  # the format's key: apex, healthbench, inspect, huggingface, taskwright
    label: ClassVar[str]  # what the admin reads on the pack form
    needs_worlds: ClassVar[bool] = False  # does it read world_files_zipped/ (then the worlds go in the pack)

    def __init__(self, *, pack_info: dict, spool_dir: str) -> None:
        self.pack_info = pack_info  # name, version, project, created_at
        self.spool_dir = spool_dir

    def add_world(self, world: PackWorld) -> None:
        """A world state, before the first task on it. Its zip is already in the pack at world.zip_path."""

    def add_task(self, task: PackTask) -> None:
        raise NotImplementedError

    def finish(self, out: PackOutput) -> None:
        raise NotImplementedError

    def spool(self, name: str) -> BinaryIO:
        """A new spool file of this writer's, open for writing and reading."""
        return open(os.path.join(self.spool_dir, f"{self.name}-{name}"), "w+b")  # the writer closes it in finish


class DirectoryOutput:
    """A PackOutput onto a folder: the unpacked pack, for tests and for tools that want files."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def _target(self, path: str) -> Path:
        if path.startswith("/") or any(part in ("", ".", "..") for part in path.split("/")):
            raise ValueError(f"not a path inside the pack: {path!r}")
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_bytes(self, path: str, data: bytes) -> None:
        self._target(path).write_bytes(data)

    def write_file(self, path: str, source: BinaryIO) -> None:
        with self._target(path).open("wb") as out:
            shutil.copyfileobj(source, out, 1024 * 1024)
