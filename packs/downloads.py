"""Serving a built pack, whole or one format at a time."""

import hashlib
import json
import tempfile
import zipfile

from django.http import FileResponse, Http404

from packs import selectors
from packs.formats import FORMATS
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
        readme = _subset_readme(archive.read("README.md").decode(), pack=pack, key=key, paths=paths) if "README.md" in paths else None
        for path in paths:
            info = archive.getinfo(path)
            if path == "manifest.json":
                subset.writestr(info, _subset_manifest(json.loads(archive.read(info)), pack=pack, key=key, paths=paths, readme=readme))
                continue
            if path == "README.md":
                subset.writestr(info, readme)
                continue
            with archive.open(info) as src, subset.open(info, "w", force_zip64=True) as dst:
                while chunk := src.read(1024 * 1024):
                    dst.write(chunk)
    out.seek(0)
    response = FileResponse(out, as_attachment=True, filename=pack.filename.replace(".zip", f"-{key}.zip"), content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _subset_readme(text: str, *, pack: Pack, key: str, paths: list[str]) -> bytes:
    """The pack's README, opened by what this download is: one format, and which files."""
    label = FORMATS[key][2] if key in FORMATS else key
    tops = sorted({p.split("/", 1)[0] + ("/" if "/" in p else "") for p in paths if p not in ("README.md", "manifest.json")})
    head = (f"# {pack.name} v{pack.version}: {label} only\n\n"
            f"This download holds one format of the pack, {label}: {', '.join(f'`{t}`' for t in tops)}, with a manifest "
            f"listing only these files. The whole pack (every format; sha256 {pack.sha256}) is the pack's *Download all*. "
            "The rest of this README describes the whole pack: what it says of other formats does not apply here.\n\n---\n\n")
    return (head + text).encode()


def _subset_manifest(manifest: dict, *, pack: Pack, key: str, paths: list[str], readme: bytes | None = None) -> bytes:
    kept = set(paths)
    manifest["subset_of"] = {"formats": manifest.get("formats"), "sha256": pack.sha256}
    manifest["formats"] = [key]
    manifest["files"] = [f for f in manifest.get("files") or [] if f.get("path") in kept]
    if readme is not None:  # the README this zip holds, opened by what it is
        opened = {"sha256": hashlib.sha256(readme).hexdigest(), "bytes": len(readme)}
        manifest["files"] = [{**f, **opened} if f.get("path") == "README.md" else f for f in manifest["files"]]
    manifest["contents"] = {name: [p for p in listed if p in kept] for name, listed in (manifest.get("contents") or {}).items()
                            if any(p in kept for p in listed)}
    return json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2).encode() + b"\n"
