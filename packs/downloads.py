"""Serving a built pack, whole or one format at a time."""

import tempfile
import zipfile

from django.http import FileResponse, Http404

from packs import selectors
from packs.models import Pack


def format_download_response(pack: Pack, key: str) -> FileResponse:
    """A zip of one format's files (with the worlds it reads, the README and the manifest),
    copied out of the pack's zip entry by entry."""
    paths = selectors.pack_format_files(pack=pack, key=key)
    try:
        source = pack.file.open("rb")
    except FileNotFoundError:  # removed from the store behind our back
        raise Http404("This pack's file is missing from storage; build a new version.") from None
    out = tempfile.TemporaryFile()  # noqa: SIM115 -- FileResponse closes it
    with source, zipfile.ZipFile(source) as archive, zipfile.ZipFile(out, "w") as subset:
        for path in paths:
            info = archive.getinfo(path)
            with archive.open(info) as src, subset.open(info, "w", force_zip64=True) as dst:
                while chunk := src.read(1024 * 1024):
                    dst.write(chunk)
    out.seek(0)
    response = FileResponse(out, as_attachment=True, filename=pack.filename.replace(".zip", f"-{key}.zip"), content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    return response
