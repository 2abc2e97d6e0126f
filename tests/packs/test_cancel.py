"""Cancelling a pack's build: a queued pack never starts, a building one stops at its next
progress beat and keeps no file; the page shows the bar, the Cancel control, then Cancelled."""

import os

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring.archipelago import cache
from core.exceptions import PermissionRefused
from packs import services
from packs.models import Pack, PackStatus, PackTaskEntry, PackWorldEntry
from packs.services import pack_build, pack_cancel, pack_create, packs_recover
from reviews.services.submissions import submission_world_render
from tests import factories
from tests.packs.conftest import approve

HX = {"HTTP_HX_REQUEST": "true"}


def _pack_of_three_worlds(team) -> Pack:
    ids = []
    for n in range(3):
        world = factories.world(team.project, team.author, title=f"World {n}", documents=2, drafted=True)
        ids.append(approve(factories.env_task(world, team.author, title=f"Task {n}"), author=team.author, reviewer=team.reviewer).pk)
    return pack_create(project_id=team.project.pk, user=team.admin, name="Release", submission_ids=ids, formats=["taskwright"])


def test_a_cancel_stops_the_build_at_its_next_beat_and_keeps_no_file(team, settings, tmp_path, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    with django_capture_on_commit_callbacks(execute=False):
        pack = _pack_of_three_worlds(team)
    for submission in pack.submissions.all():  # (as their approvals do: the build then only copies the worlds)
        submission_world_render(submission_id=submission.pk)
    worlds_read = []
    read_world = services.world_snapshot

    def admin_cancels_while_the_first_world_is_read(submission_id: int) -> dict:
        worlds_read.append(submission_id)
        if len(worlds_read) == 1:
            pack_cancel(pack=pack, user=team.admin)
        return read_world(submission_id)

    monkeypatch.setattr(services, "world_snapshot", admin_cancels_while_the_first_world_is_read)
    pack_build(pack_id=pack.pk)

    pack.refresh_from_db()
    assert pack.status == PackStatus.CANCELLED and pack.is_done
    assert len(worlds_read) == 1  # the other two worlds were never read: the build stopped after its first task
    assert pack.error == "Cancelled while building, after 1 of 3 task versions were written; no file was kept."
    assert not pack.file and not (tmp_path / "packs" / team.project.slug).exists()  # (only the shared world cache is there)
    assert not PackTaskEntry.objects.filter(pack=pack).exists() and not PackWorldEntry.objects.filter(pack=pack).exists()

    pack_build(pack_id=pack.pk)  # a message sent again does nothing
    assert packs_recover(queued_for=None) == 0
    assert Pack.objects.get(pk=pack.pk).status == PackStatus.CANCELLED and len(worlds_read) == 1


def test_a_cancel_while_the_worlds_render_stops_the_rendering(team, settings, tmp_path, monkeypatch,
                                                              django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    with django_capture_on_commit_callbacks(execute=False):
        pack = _pack_of_three_worlds(team)
    keep = cache.WorldZipCache._keep

    def admin_cancels_as_the_first_world_is_kept(self, key, rendered):
        keep(self, key, rendered)
        pack_cancel(pack=pack, user=team.admin)

    monkeypatch.setattr(cache.WorldZipCache, "_keep", admin_cancels_as_the_first_world_is_kept)
    pack_build(pack_id=pack.pk)

    pack.refresh_from_db()
    assert pack.status == PackStatus.CANCELLED
    assert pack.error == "Cancelled while building, after 1 of 3 worlds were rendered; no file was kept."
    assert len([name for name in os.listdir(tmp_path / cache.FOLDER) if name.endswith(".zip")]) == 1
    assert not pack.file and not PackWorldEntry.objects.filter(pack=pack).exists()


def test_a_queued_pack_cancelled_never_starts_and_only_admins_cancel(team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        pack = _pack_of_three_worlds(team)
    with pytest.raises(PermissionRefused):
        pack_cancel(pack=pack, user=team.author)
    assert Pack.objects.get(pk=pack.pk).status == PackStatus.QUEUED

    pack_cancel(pack=pack, user=team.admin)
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert (pack.status, pack.attempts, pack.progress, pack.error) == (PackStatus.CANCELLED, 0, 0, "Cancelled before the build started.")


def test_the_packs_page_shows_the_bar_and_cancel_then_cancelled(team, client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        pack = _pack_of_three_worlds(team)
    Pack.objects.filter(pk=pack.pk).update(status=PackStatus.BUILDING, progress=40)  # as a worker mid-build leaves it
    client.force_login(team.admin)

    page = client.get(reverse("pack-list", args=[team.project.pk])).content.decode()
    assert 'role="progressbar" aria-label="Build progress" aria-valuemin="0" aria-valuemax="100" aria-valuenow="40"' in page
    assert f'id="cancel-pack-{pack.pk}"' in page and 'hx-trigger="every 2s"' in page
    detail = client.get(reverse("pack-detail", args=[pack.pk])).content.decode()
    assert 'aria-valuenow="40"' in detail and f'hx-post="{reverse("pack-cancel", args=[pack.pk])}?on=detail"' in detail

    fragment = client.post(reverse("pack-cancel", args=[pack.pk]) + "?on=detail", **HX).content.decode()
    assert fragment.lstrip().startswith(f'<tr id="pack-{pack.pk}">')  # no trigger: the row stops polling
    assert ">Cancelled<" in fragment and "Cancelled while building." in fragment and 'aria-valuenow="40"' in fragment
    assert f'id="cancel-pack-{pack.pk}"' not in fragment
    assert Pack.objects.get(pk=pack.pk).status == PackStatus.CANCELLED

    again = client.post(reverse("pack-cancel", args=[pack.pk]), **HX)  # nothing left to cancel: said, not hidden
    assert again.status_code == 422 and "there is no build to cancel" in again.content.decode()
    page = client.get(reverse("pack-list", args=[team.project.pk])).content.decode()
    assert ">Cancelled<" in page and f'id="cancel-pack-{pack.pk}"' not in page and 'hx-trigger="every 2s"' not in page


def test_cancel_is_a_post_for_admins_only_also_through_the_api(team, client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        pack = _pack_of_three_worlds(team)
    client.force_login(team.author)
    assert client.post(reverse("pack-cancel", args=[pack.pk]), **HX).status_code == 404  # packs are an admin's business
    client.force_login(team.admin)
    assert client.get(reverse("pack-cancel", args=[pack.pk])).status_code == 405

    def api(user):
        api_client = APIClient()
        api_client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return api_client

    assert api(team.author).post(f"/api/packs/{pack.pk}/cancel/").status_code == 404
    assert Pack.objects.get(pk=pack.pk).status == PackStatus.QUEUED
    response = api(team.admin).post(f"/api/packs/{pack.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert api(team.admin).get(f"/api/packs/{pack.pk}/download/").status_code == 409
