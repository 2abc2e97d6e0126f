"""An approved version's world state is rendered once, after the approval commits, into the
shared world zips (authoring.archipelago.cache); the first pack that holds it copies the zip
instead of rendering every document while the admin waits."""

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from accounts.models import Role, User
from authoring.archipelago import cache
from authoring.services.world_transfer import world_export_archive
from core.exceptions import ApplicationError
from packs.models import PackStatus
from packs.services import pack_build, pack_create
from reviews.services.submissions import submission_world_render
from tests.packs.conftest import approve


def _kept(world: dict) -> list[str]:
    key = cache.world_zip_key(world)
    return [name for name in (f"{key}.zip", f"{key}.json") if default_storage.exists(f"{cache.FOLDER}/{name}")]


def _no_rendering(monkeypatch) -> list[str]:
    rendered: list[str] = []

    def refuse(worlds, **kwargs):
        for world in worlds:
            rendered.append(world["title"])
            raise AssertionError("rendered again")
        yield from ()

    monkeypatch.setattr(cache, "render_world_zips", refuse)
    return rendered


@pytest.fixture
def approved(demo_seeded, eager, django_capture_on_commit_callbacks):
    env_task = demo_seeded.env_tasks.get()
    with django_capture_on_commit_callbacks(execute=True):
        submission = approve(env_task, author=User.objects.get(username="demo-author"),
                             reviewer=User.objects.get(username="demo-reviewer"))
    return demo_seeded, env_task, submission


def test_the_approval_renders_the_world_and_the_first_pack_copies_it(approved, monkeypatch):
    project, env_task, submission = approved
    world = submission.snapshot["world"]
    assert _kept(world) == [f"{cache.world_zip_key(world)}.zip", f"{cache.world_zip_key(world)}.json"]
    rendered = _no_rendering(monkeypatch)
    admin = project.memberships.get(role=Role.ADMIN).user
    pack = pack_create(project_id=project.pk, user=admin, name="First", submission_ids=[submission.pk])
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert (pack.status, rendered) == (PackStatus.READY, []), pack.error
    with pack.file.open("rb") as handle:
        in_pack = zipfile.ZipFile(io.BytesIO(handle.read())).read(f"world_files_zipped/world-{world['id']}.zip")
    with world_export_archive(world=env_task.world) as archive:
        assert in_pack == archive.read()  # byte for byte the world's own export


def test_rendering_again_finds_the_kept_zip(approved, monkeypatch):
    _, _, submission = approved
    rendered = _no_rendering(monkeypatch)
    submission_world_render(submission_id=submission.pk)
    assert rendered == []


def test_a_version_sent_back_renders_nothing(demo_seeded, eager, django_capture_on_commit_callbacks, monkeypatch):
    from reviews.models import Decision
    from reviews.services import review_decide, submission_claim_next, submission_create
    from tests import factories

    rendered = _no_rendering(monkeypatch)
    env_task = demo_seeded.env_tasks.get()
    with django_capture_on_commit_callbacks(execute=True):
        submission_create(env_task=env_task, user=User.objects.get(username="demo-author"))
        claimed = submission_claim_next(user=User.objects.get(username="demo-reviewer"))
        review_decide(submission=claimed, user=claimed.claimed_by, decision=Decision.REQUEST_CHANGES, comment="Cite the SPA.",
                      checklist=factories.checklist(claimed.project_id))
    assert rendered == []


def test_pruning_deletes_only_old_zips_and_a_pack_renders_a_pruned_world_again(approved, settings):
    import os
    import time
    from io import StringIO

    from django.core.management import call_command

    project, _, submission = approved
    world = submission.snapshot["world"]
    out = StringIO()
    call_command("prune_world_cache", "--older-than", "1", stdout=out)
    assert "Deleted 0 files" in out.getvalue() and len(_kept(world)) == 2
    month_ago = time.time() - 31 * 24 * 3600
    for name in _kept(world):
        os.utime(default_storage.path(f"{cache.FOLDER}/{name}"), (month_ago, month_ago))
    call_command("prune_world_cache", stdout=out)
    assert "Deleted 2 files" in out.getvalue() and _kept(world) == []
    admin = project.memberships.get(role=Role.ADMIN).user
    pack = pack_create(project_id=project.pk, user=admin, name="After pruning", submission_ids=[submission.pk])
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    assert len(_kept(world)) == 2  # rendered again, and kept


RENDER_IN_A_CHILD = """
import json, sys
import django
django.setup()
from authoring.archipelago import cache
from tests.rendering.samples import CAP_TABLE, DECK, MEMO

docs = [{"path": f"Deal/Memo.{fmt}", "kind": "file", "format": fmt, "content": content, "metadata": {}, "brief": "", "status": "edited"}
        for fmt, content in (("docx", MEMO), ("pdf", MEMO), ("pptx", DECK), ("xlsx", CAP_TABLE))]
broken = {**docs[0], "format": "xlsx", "content": "## Sheet: A\\n\\n| =1/ |"}
worlds = [{"title": "Falcon", "outline": "Acme buys Zoe.", "facts": [], "documents": docs},
          {"title": "Broken", "outline": "", "facts": [], "documents": [broken]}]
kept = {}
store = cache.WorldZipCache(kept.get, kept.__setitem__, kept.__contains__)
progress = []
rendered = store.fill(worlds + worlds, on_rendered=lambda done, total: progress.append((done, total)))
loaded = sorted(m for m in ("fpdf", "docx", "pptx", "scipy.stats", "xlsxwriter") if m in sys.modules)
in_process = cache.render_world_zip(worlds[0])[0]
print(json.dumps({"rendered": rendered, "progress": progress, "loaded": loaded, "kept": len(kept),
                  "same_bytes": store.get(worlds[0])[0] == in_process}))
"""


def test_rendering_happens_in_a_child_that_takes_its_libraries_with_it():
    """A process that fills the world cache loads none of the rendering libraries (a packs
    worker stays small); the zip is byte for byte the one rendered in process; a state that
    does not render is left out, and a state given twice is rendered once."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    child = subprocess.run([sys.executable, "-c", RENDER_IN_A_CHILD], capture_output=True, text=True, env=env, cwd=settings.BASE_DIR)
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result == {"rendered": 1, "progress": [[1, 2], [2, 2]], "loaded": [], "kept": 2, "same_bytes": True}


def test_a_world_that_does_not_render_says_which_document(tmp_path):
    kept: dict[str, bytes] = {}
    store = cache.WorldZipCache(kept.get, kept.__setitem__, kept.__contains__)
    world = {"title": "Broken", "outline": "", "facts": [], "documents": [
        {"path": "Deal/Model.xlsx", "kind": "file", "format": "xlsx", "content": "## Sheet: A\n\n| =1/ |", "metadata": {}}]}
    with pytest.raises(ApplicationError, match=r"Deal/Model\.xlsx"):
        store.get_or_render(world)
    assert kept == {}


def test_a_rendering_that_runs_too_long_is_stopped_with_the_reason():
    world = {"title": "Slow", "outline": "", "facts": [], "documents": []}
    with pytest.raises(ApplicationError, match=r"stopped \(it ran past"):
        list(cache.render_world_zips([world], timeout=0.01))
