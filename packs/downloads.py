"""Serving a built pack, whole or one format at a time."""

import json
import tempfile
import zipfile

from django.http import FileResponse, Http404

from packs import selectors
from packs.models import Pack


def format_download_response(pack: Pack, key: str) -> FileResponse:
    """A zip of one format's files (with the worlds it reads and the README), copied out of
    the pack's zip entry by entry, and a manifest of its own: the pack's, listing only the
    files this zip holds (so the zip checks against it, and Taskwright's own format imports),
    with `subset_of` naming the whole pack."""
    paths = selectors.pack_format_files(pack=pack, key=key)
    try:
        source = pack.file.open("rb")
    except FileNotFoundError:  # removed from the store behind our back
        raise Http404("This pack's file is missing from storage; build a new version.") from None
    out = tempfile.TemporaryFile()  # noqa: SIM115 -- FileResponse closes it
    with source, zipfile.ZipFile(source) as archive, zipfile.ZipFile(out, "w") as subset:
        for path in paths:
            info = archive.getinfo(path)
            if path == "manifest.json":
                subset.writestr(info, _subset_manifest(json.loads(archive.read(info)), pack=pack, key=key, paths=paths))
                continue
            with archive.open(info) as src, subset.open(info, "w", force_zip64=True) as dst:
                while chunk := src.read(1024 * 1024):
                    dst.write(chunk)
    out.seek(0)
    response = FileResponse(out, as_attachment=True, filename=pack.filename.replace(".zip", f"-{key}.zip"), content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _subset_manifest(manifest: dict, *, pack: Pack, key: str, paths: list[str]) -> bytes:
    kept = set(paths)
    manifest["subset_of"] = {"formats": manifest.get("formats"), "sha256": pack.sha256}
    manifest["formats"] = [key]
    manifest["files"] = [f for f in manifest.get("files") or [] if f.get("path") in kept]
    manifest["contents"] = {name: [p for p in listed if p in kept] for name, listed in (manifest.get("contents") or {}).items()
                            if any(p in kept for p in listed)}
    return json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2).encode() + b"\n"
