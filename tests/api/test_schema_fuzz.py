"""Schemathesis against /api/schema/: every operation, as an author and as an admin (token),
a bounded number of generated requests each, through the Django WSGI app. Checks: no 5xx,
the status code and the content type are ones the schema documents for the operation, the
body conforms to the schema, and every 4xx has a JSON body.

Half the generated requests have their path ids replaced by ids of real objects of the
team's project (a world, a task, a criterion, a submission, a pack …), so operations are
exercised on objects that exist, not only on 404s. Deterministic (derandomized, no example
database); no shrinking, so a failure costs one request, not dozens. Prints the counts.
"""

import json
import os
import time
from collections import Counter
from itertools import count

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from authoring.services.task_files import task_input_file_add_bytes
from packs.services import pack_build, pack_create
from reviews.services import submission_create
from rollouts.models import Step
from tests import factories
from tests.api.conftest import approved_submission
from tests.grading.test_pages import demo  # noqa: F401 - a fixture

# Per operation and role: ~950 requests in all, 30–50 s on the 2-core CI machine. A deeper
# run: SCHEMATHESIS_EXAMPLES=50 pytest tests/api/test_schema_fuzz.py; with invalid input
# (wrong types, missing fields, malformed ids): SCHEMATHESIS_MODE=negative.
EXAMPLES_PER_OPERATION = int(os.environ.get("SCHEMATHESIS_EXAMPLES") or 5)
MODE = GenerationMode(os.environ.get("SCHEMATHESIS_MODE") or "positive")


def json_body_on_4xx(ctx, response, case) -> None:
    if 400 <= response.status_code < 500:
        content_type = response.headers.get("content-type", [""])[0]
        assert content_type.startswith("application/json"), f"{response.status_code} answered with {content_type!r}, not JSON"
        try:
            body = json.loads(response.content)
        except ValueError as error:
            raise AssertionError(f"{response.status_code} with a body that is not JSON: {response.content[:200]!r}") from error
        assert isinstance(body, dict) and body, f"{response.status_code} with an empty or non-object body: {body!r}"


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance, json_body_on_4xx]


@pytest.fixture
def objects(team, demo, settings, tmp_path):  # noqa: F811
    """One of most things in the team's project, for real ids in paths: with `demo`, a batch
    of rollouts on the fake model server, their steps and grades, and its model endpoint."""
    approved = approved_submission(team, title="Approved task")
    world = factories.world(team.project, team.author, title="Fuzzed world", drafted=True)
    env_task = factories.env_task(world, team.author, title="Fuzzed task")
    queued = submission_create(env_task=factories.env_task(world, team.author, title="Queued task"), user=team.author)
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Fuzzed pack", submission_ids=[approved.pk])
    pack_build(pack_id=pack.pk)
    criterion = env_task.rubric_versions.get().criteria.first()
    input_file = task_input_file_add_bytes(env_task=env_task, user=team.author, path="Inputs/figures.csv", data=b"q,revenue\nQ1,120\n")
    return {
        "projects": [team.project.pk],
        "worlds": [world.pk, approved.env_task.world_id],
        "documents": list(world.documents.values_list("pk", flat=True)),
        "tasks": [env_task.pk, approved.env_task_id],
        "criteria": [criterion.pk],
        "task-input-files": [input_file.pk],
        "submissions": [queued.pk, approved.pk],
        "packs": [pack.pk],
        "document-versions": list(world.documents.first().versions.values_list("pk", flat=True)),
        "batches": [demo.batch.pk],
        "rollouts": [rollout.pk for rollout in demo.rollouts],
        "steps": list(Step.objects.filter(rollout__batch=demo.batch).values_list("pk", flat=True)[:4]),
        "model-endpoints": [demo.batch.endpoint_id],
    }


def _real_id(path: str, objects: dict, turn: int) -> int | None:
    first = path.removeprefix("/api/").split("/")[0]
    ids = objects.get(first) or [pk for pks in objects.values() for pk in pks]
    return ids[turn % len(ids)] if ids else None


def _runner(operation, *, mode: GenerationMode, headers: dict, objects: dict, tally: Counter):
    turn = count()

    @hypothesis_settings(
        max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False,
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case) -> None:
        n = next(turn)
        if case.path_parameters and "id" in case.path_parameters and n % 2 == 0:
            real = _real_id(operation.path, objects, n // 2)
            if real is not None:
                case.path_parameters["id"] = real
        response = case.call(headers=headers)
        tally[response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)

    return run


def _fuzz(schema, *, token: str, objects: dict, tally: Counter) -> list[str]:
    failures: list[str] = []
    headers = {"Authorization": f"Token {token}"}
    for result in schema.get_all_operations():
        operation = result.ok()
        try:
            _runner(operation, mode=MODE, headers=headers, objects=objects, tally=tally)()
        except Unsatisfiable:  # negative mode, an operation with no parameter or body to make invalid
            continue
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # (schemathesis's FailureGroup) one per operation is enough to report
            failures.append(f"{operation.label}: {str(error)[:1500]}")
    return failures


@pytest.fixture
def wsgi_app():
    """The project's WSGI application, keeping the test's database connection (and so its
    transaction) across requests, as Django's test client does."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from config.wsgi import application

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield application
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
def test_the_api_holds_under_fuzzing(team, objects, wsgi_app, settings, tmp_path, capsys):
    settings.MEDIA_ROOT = tmp_path / "media"
    # The throttles are tested on their own (test_throttling.py); here they would only answer 429.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "100000/min", "address": "100000/min"}}
    started = time.monotonic()
    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    operations = sum(1 for _ in schema.get_all_operations())
    report = []
    all_failures = []
    for role in ("author", "admin"):
        user = getattr(team, role)
        token, _ = Token.objects.get_or_create(user=user)
        tally: Counter = Counter()
        failures = _fuzz(schema, token=token.key, objects=objects, tally=tally)
        all_failures += [f"[{role}] {failure}" for failure in failures]
        report.append(
            f"schemathesis as {role} ({MODE.value}, {EXAMPLES_PER_OPERATION} per operation): {operations} operations, "
            f"{sum(tally.values())} requests, "
            f"{len(failures)} failing; statuses {dict(sorted(tally.items()))}"
        )
    with capsys.disabled():
        print()
        for line in report:
            print(line)
        print(f"schemathesis: {time.monotonic() - started:.1f} s")
    assert not all_failures, "\n\n".join(all_failures)
