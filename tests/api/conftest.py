"""Fixtures for the API tests: token-authenticated clients, an isolated cache (the login
rate limit counts in it) and an isolated media root (packs write files)."""

from collections.abc import Callable

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import User
from reviews.models import Decision, Submission
from reviews.services import review_decide, submission_claim_next, submission_create
from tests import factories


@pytest.fixture(autouse=True)
def _isolated_cache_and_media(settings, tmp_path):
    # The default file cache and media root are shared by every process on the machine;
    # a failed-login counter or a pack file must not leak between test runs.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests-api"}}
    settings.MEDIA_ROOT = tmp_path / "media"
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def api_for(db) -> Callable[[User], APIClient]:
    """An APIClient that sends the user's API token."""

    def make(user: User) -> APIClient:
        token, _ = Token.objects.get_or_create(user=user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


def approved_submission(team, *, title: str = "Approved task") -> Submission:
    """A submission of `team`'s project that went through QA, via the services."""
    world = factories.world(team.project, team.author, title=f"World of {title}", drafted=True)
    env_task = factories.env_task(world, team.author, title=title)
    submission = submission_create(env_task=env_task, user=team.author)
    claimed = submission_claim_next(user=team.reviewer)
    assert claimed is not None and claimed.pk == submission.pk
    review_decide(submission=claimed, user=team.reviewer, decision=Decision.APPROVE, comment="Good.",
        checklist=factories.checklist(claimed.project_id))
    submission.refresh_from_db()
    return submission
