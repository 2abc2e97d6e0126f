"""World zips kept by what they are made of, so each world state is rendered once.

A world's zip (write_world_snapshot_zip) depends only on the state's title, outline, facts
and documents, and on the code that renders them. It is kept under a digest of those
(`world_zip_key`) in Django's storage, so every host shares it: a pack build copies a kept
zip instead of rendering every document again (a docx about 60 ms, a pptx 40 ms, an xlsx
with formulas 20 ms and a second to load the formula library, a PDF in DejaVu 0.2 s), and an
approved task version has its world state rendered ahead of the first pack that holds it
(reviews.services.submissions.submission_world_render). A file that is kept is complete
(saved whole), and a kept zip is never changed: a new state or new rendering code makes a
new key.
"""

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from tempfile import TemporaryDirectory, TemporaryFile

from core.exceptions import ApplicationError

from .export import write_world_snapshot_zip

FOLDER = "packs/world-cache"  # (where the first pack builds kept them; the name stays so they are found)
LIBRARIES = ("python-docx", "openpyxl", "XlsxWriter", "python-pptx", "fpdf2", "formulas", "icalendar")


def _renderer_fingerprint() -> str:
    """A digest of the code that turns documents into files: the rendering and export
    modules and the versions of the libraries they call. Any change makes new keys."""
    import authoring.archipelago
    import authoring.rendering

    sha = hashlib.sha256()
    for package in (authoring.rendering, authoring.archipelago):
        for path in sorted(Path(package.__file__).parent.glob("*.py")):
            sha.update(path.name.encode() + b"\0" + path.read_bytes())
    for library in LIBRARIES:
        try:
            sha.update(f"{library}={importlib.metadata.version(library)}".encode())
        except importlib.metadata.PackageNotFoundError:
            sha.update(library.encode())
    return sha.hexdigest()


RENDERER = _renderer_fingerprint()


def world_zip_key(world: Mapping) -> str:
    """The key of a world state ({"title", "outline", "facts", "documents"}, as a submission
    freezes it) with this rendering code."""
    value = [RENDERER, world.get("title") or "", world.get("outline") or "", list(world.get("facts") or ()),
             sorted(world.get("documents") or (), key=lambda d: d["path"])]
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def render_world_zip(world: Mapping) -> tuple[bytes, dict]:
    """The world state's zip in the Archipelago layout (byte for byte the world's own
    export) and its counts per kind. Raises ApplicationError naming the documents that do
    not render."""
    snapshot = {"title": world.get("title") or "", "outline": world.get("outline") or "", "facts": list(world.get("facts") or ()),
                "documents": list(world.get("documents") or ())}
    with TemporaryFile() as out:
        counts = write_world_snapshot_zip(snapshot, out=out)
        out.seek(0)
        return out.read(), counts


RENDER_TIMEOUT = 30 * 60  # seconds for one child to render every world it is given
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Rendered:
    """One world state rendered apart: its zip and counts, or the reason it does not render."""

    data: bytes | None = None
    counts: dict | None = None
    error: str = ""


def render_world_zips(worlds: Iterable[Mapping], *, timeout: float = RENDER_TIMEOUT) -> Iterator[Rendered]:
    """Each world state's zip (render_world_zip), in order, rendered in one short-lived
    child process (authoring.archipelago.render_apart says why), yielded as each is done.
    A child that crashes or runs past `timeout` raises ApplicationError; closing the
    generator early stops the child."""
    with TemporaryDirectory(prefix="world-render-") as folder:
        spool, log = Path(folder) / "worlds.jsonl", Path(folder) / "errors.log"
        total = 0
        with spool.open("w", encoding="utf-8") as out:
            for world in worlds:
                snapshot = {key: world.get(key) for key in ("title", "outline", "facts", "documents")}
                out.write(json.dumps(snapshot, ensure_ascii=False) + "\n")
                total += 1
        if not total:
            return
        timed_out = threading.Event()
        with log.open("w") as errors:
            child = subprocess.Popen(
                [sys.executable, "-m", "authoring.archipelago.render_apart", str(spool), folder],
                cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=errors, text=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))},
            )

        def stop() -> None:
            timed_out.set()
            child.kill()

        timer = threading.Timer(timeout, stop)
        timer.start()
        done = 0
        try:
            for line in child.stdout:
                result = json.loads(line)
                if "error" in result:
                    yield Rendered(error=result["error"])
                else:
                    path = Path(folder) / f"{result['n']}.zip"
                    data = path.read_bytes()
                    path.unlink()
                    yield Rendered(data=data, counts=result["counts"])
                done += 1
        finally:
            timer.cancel()
            if child.poll() is None:
                child.kill()
            child.wait()
            child.stdout.close()
        if done < total:
            if timed_out.is_set():
                reason = f"it ran past {timeout / 60:g} minutes"
            else:
                last = log.read_text(errors="replace").strip().splitlines()[-1:] or [f"exit code {child.returncode}"]
                reason = f"{last[0][:300]}"
            raise ApplicationError(f"The world could not be rendered: the process rendering its documents stopped ({reason}).")


class WorldZipCache:
    """`load(name)`, `store(name, bytes)` and `exists(name)` are the storage
    (`stored_world_zips` keeps them in Django's storage; a test may keep them in a dict).
    What is missing is rendered apart (render_world_zips)."""

    def __init__(self, load: Callable[[str], bytes | None], store: Callable[[str, bytes], None],
                 exists: Callable[[str], bool]) -> None:
        self.load, self.store, self.exists = load, store, exists

    def get(self, world: Mapping) -> tuple[bytes, dict] | None:
        key = world_zip_key(world)
        data, counts = self.load(f"{key}.zip"), self.load(f"{key}.json")
        return (data, json.loads(counts)) if data is not None and counts is not None else None

    def _keep(self, key: str, rendered: Rendered) -> None:
        self.store(f"{key}.json", json.dumps(rendered.counts, sort_keys=True).encode())
        self.store(f"{key}.zip", rendered.data)  # last: a zip that is there has its counts

    def get_or_render(self, world: Mapping) -> tuple[bytes, dict]:
        found = self.get(world)
        if found is not None:
            return found
        (rendered,) = render_world_zips([world])
        if rendered.error:
            raise ApplicationError(rendered.error)
        self._keep(world_zip_key(world), rendered)
        return rendered.data, rendered.counts

    def fill(self, worlds: Iterable[Mapping], *, on_rendered: Callable[[int, int], None] = lambda done, total: None) -> int:
        """Render the world states that are not kept yet, all in one child process, and keep
        them; `on_rendered(done, total)` after each. A state that does not render is left
        out (get_or_render then says why). Returns how many were rendered."""
        keys: list[str] = []  # of the states sent to render, in order

        def missing() -> Iterator[Mapping]:
            for world in worlds:
                key = world_zip_key(world)
                if key not in keys and not self.exists(f"{key}.zip"):
                    keys.append(key)
                    yield world

        kept = 0
        # (render_world_zips reads every world before its first answer: `keys` is complete by then)
        with closing(render_world_zips(missing())) as results:  # (closed at once when on_rendered raises: the child stops)
            for n, rendered in enumerate(results):
                if not rendered.error:
                    self._keep(keys[n], rendered)
                    kept += 1
                on_rendered(n + 1, len(keys))
        return kept


def stored_world_zips() -> WorldZipCache:
    """The world zips in Django's storage (FOLDER), shared by every host."""
    from django.core.files.storage import default_storage

    from core.files import save_once

    def load(name: str) -> bytes | None:
        try:
            with default_storage.open(f"{FOLDER}/{name}", "rb") as handle:
                return handle.read()
        except OSError:  # (FileNotFoundError included)
            return None

    return WorldZipCache(load, lambda name, data: save_once(f"{FOLDER}/{name}", data),
                         lambda name: default_storage.exists(f"{FOLDER}/{name}"))


def stored_world_zips_prune(*, older_than_days: float) -> tuple[int, int]:
    """Delete the kept world zips written more than `older_than_days` ago: (files, bytes).
    The cache only grows by itself (a zip per world state approved or packed, and per
    rendering code), and deleting from it is safe at any time: a build that finds a zip
    missing renders the world again."""
    from django.core.files.storage import default_storage
    from django.utils import timezone

    cutoff = timezone.now() - timedelta(days=older_than_days)
    try:
        _, names = default_storage.listdir(FOLDER)
    except FileNotFoundError:  # nothing kept yet
        return 0, 0
    files = size = 0
    for name in names:
        path = f"{FOLDER}/{name}"
        try:
            if default_storage.get_modified_time(path) >= cutoff:
                continue
            length = default_storage.size(path)
            default_storage.delete(path)
        except FileNotFoundError:  # (pruned by another process just now)
            continue
        files, size = files + 1, size + length
    return files, size
