"""World zips rendered in a short-lived child process.

The libraries that turn documents into files stay in a process's memory once they are
loaded: `formulas` imports scipy.stats as the first formula compiles (+60 MB), fpdf2 with
fontTools +31 MB, python-docx and python-pptx with their templates. A packs worker that
rendered one world would keep about 100 MB more for the rest of its life, and be at about
300 MB when it builds. Pack builds and approvals therefore render in a child process that
exits when it is done (authoring.archipelago.cache.render_world_zips): the worker stays at
the size of a build that copies kept zips (docs/performance.md, "Packs").

The child needs no database and no Django set-up: it reads the world states as JSON lines
from a file, renders each in turn into `<folder>/<n>.zip` and prints, for each, one JSON
line as it finishes: {"n": n, "counts": {...}} or {"n": n, "error": "..."} (the message of
the ApplicationError that names the documents that do not render).

    python -m authoring.archipelago.render_apart <worlds.jsonl> <folder>
"""

import json
import sys
from pathlib import Path


def main(worlds_path: str, folder: str) -> None:
    from core.exceptions import ApplicationError

    from .cache import render_world_zip

    with open(worlds_path, encoding="utf-8") as worlds:
        for n, line in enumerate(worlds):
            try:
                data, counts = render_world_zip(json.loads(line))
            except ApplicationError as exc:
                print(json.dumps({"n": n, "error": exc.message}), flush=True)
                continue
            (Path(folder) / f"{n}.zip").write_bytes(data)
            print(json.dumps({"n": n, "counts": counts}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
