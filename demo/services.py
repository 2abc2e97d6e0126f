"""Seed the demo: three users, one project, one world with a small data room, one task with
a rubric, the scripted sample model, and one finished batch of trial rollouts of the task
on that model, so a newcomer without an API key can read trajectories at once. The content
comes from demo/data (demo.content); this module only writes it, through each app's services.

demo sits at the top of the import order, above packs: it seeds every app's data and
nothing imports it. Idempotent: every object is looked up by its natural key first, so a
second run creates nothing and changes nothing. Passwords are generated on the first run,
kept in var/demo_logins.json (mode 600, never in the repo) and returned on every run.
"""

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts.models import Membership, Project, Role, User
from accounts.services import membership_set, project_create
from authoring import services as authoring_services
from authoring.models import EnvTask, World
from authoring.selectors import rubric_version_current
from authoring.services.task_files import task_input_file_add_bytes
from core.exceptions import ApplicationError
from demo.content import DemoContent, DemoUser
from llm.models import EndpointKind, ModelEndpoint
from llm.services import endpoint_save
from rollouts.agent import rollout_execute
from rollouts.models import RolloutBatch, RolloutStatus
from rollouts.services import rollout_batch_start

# The endpoint is site-wide, not part of the demo's content: looked up by this name.
SCRIPTED_ENDPOINT_NAME = "Scripted sample model"
DEMO_BATCH_ROLLOUTS = 4

Say = Callable[[str], None]


@dataclass(frozen=True)
class DemoLogin:
    user: DemoUser
    password: str


def demo_seed(*, content: DemoContent, logins_path: Path, say: Say) -> list[DemoLogin]:
    """Create what is missing of the demo and return its logins, in the content's order.
    `say` is told each thing created, as it happens."""
    passwords = _passwords_load_or_create(logins_path, content.users)
    with transaction.atomic():
        users = {u.username: _user(u, passwords[u.username], say) for u in content.users}
        project = _project(content, users, say)
        author = _author(content, users)
        world = _world(content, project, author, say)
        env_task = _task(content, world, author, say)
        endpoint = _scripted_endpoint(_admin(content, users), say)
    _scripted_batch(env_task, author, endpoint, say)  # after the commit: no transaction around the agent loop
    return [DemoLogin(user=u, password=passwords[u.username]) for u in content.users]


def _passwords_load_or_create(path: Path, demo_users: tuple[DemoUser, ...]) -> dict[str, str]:
    """The demo passwords: read from var/, or generated once and written there (mode 600)."""
    stored: dict[str, str] = {}
    if path.exists():
        stored = {row["username"]: row["password"] for row in json.loads(path.read_text())}
    missing = [u.username for u in demo_users if not stored.get(u.username)]
    if missing:
        for username in missing:
            stored[username] = secrets.token_urlsafe(12)
        rows = [{"username": u.username, "password": stored[u.username], "role": str(u.role)} for u in demo_users]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(rows, out, indent=2)
    path.chmod(0o600)
    return stored


def _author(content: DemoContent, users: dict[str, User]) -> User:
    """The first author in project.json: they write the world and the task and run the batch."""
    return users[content.first_with_role(Role.AUTHOR).username]


def _admin(content: DemoContent, users: dict[str, User]) -> User:
    """The first admin in project.json: they create the project and register the endpoint."""
    return users[content.first_with_role(Role.ADMIN).username]


def _user(demo_user: DemoUser, password: str, say: Say) -> User:
    username = demo_user.username
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User.objects.create_user(
            username=username, password=password, first_name=demo_user.first_name, email=f"{username}@example.test"
        )
        say(f"created user {username}")
    elif not user.check_password(password):
        # Keep the printed logins true: the stored password is the demo password.
        user.set_password(password)
        user.save(update_fields=["password"])
        say(f"reset the password of {username} to the one in var/")
    return user


def _project(content: DemoContent, users: dict[str, User], say: Say) -> Project:
    project = Project.objects.filter(slug=content.project_slug).first()
    if project is None:
        project = project_create(
            name=content.project_name, slug=content.project_slug, description=content.project_description,
            created_by=_admin(content, users),
        )
        say(f"created project {content.project_name!r}")
    for demo_user in content.users:
        user = users[demo_user.username]
        current = Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
        if current != demo_user.role:
            membership_set(project=project, user=user, role=demo_user.role)
    return project


def _world(content: DemoContent, project: Project, author: User, say: Say) -> World:
    world = World.objects.filter(project=project, title=content.world_title).first()
    if world is None:
        world = authoring_services.world_create(
            project_id=project.pk, user=author, title=content.world_title, outline=content.world_outline, facts=content.world_facts,
        )
        say(f"created world {content.world_title!r}")
    existing = set(world.documents.values_list("path", flat=True))
    for document in content.documents:
        if document.path not in existing:
            authoring_services.document_create(
                world=world, user=author, path=document.path, kind=document.kind, brief=document.brief, target_size=document.target_size,
                metadata=document.metadata, content=document.content,
            )
            say(f"created document {document.path!r}")
    return world


def _task(content: DemoContent, world: World, author: User, say: Say) -> EnvTask:
    env_task = EnvTask.objects.filter(project_id=world.project_id, title=content.task_title).first()
    if env_task is not None:
        return env_task  # never overwrite what someone has since edited in the demo task
    env_task = authoring_services.env_task_create(
        world=world, user=author, title=content.task_title, prompt=content.task_prompt, deliverable_kind=content.task_deliverable_kind,
        reference_answer=content.task_reference_answer,
    )
    for criterion in content.criteria:
        rubric = rubric_version_current(env_task=env_task)
        authoring_services.criterion_add(env_task=env_task, user=author, base_revision=rubric.revision, **criterion)
    say(f"created task {content.task_title!r} with {len(content.criteria)} rubric criteria")
    for path, data in content.task_input_files:
        task_input_file_add_bytes(env_task=env_task, user=author, path=path, data=data)
        say(f"added the input file {path!r} to the task")
    return env_task


def _scripted_endpoint(admin: User, say: Say) -> ModelEndpoint:
    """A model that needs no key, so a newcomer can walk the whole loop. It writes
    clearly-labelled sample text and is shown as "scripted" wherever it appears."""
    if not admin.is_staff:
        admin.is_staff = True  # the demo admin also manages the site's model endpoints
        admin.save(update_fields=["is_staff"])
    endpoint = ModelEndpoint.objects.filter(name=SCRIPTED_ENDPOINT_NAME).first()
    if endpoint is None:
        endpoint = endpoint_save(
            user=admin, data={"name": SCRIPTED_ENDPOINT_NAME, "kind": EndpointKind.SCRIPTED, "max_concurrency": 8, "enabled": True}
        )
        say(f"registered the model endpoint {SCRIPTED_ENDPOINT_NAME!r} (scripted sample answers, no real model)")
    return endpoint


def _scripted_batch(env_task: EnvTask, author: User, endpoint: ModelEndpoint, say: Say) -> None:
    """One batch of trial rollouts of the demo task on the scripted sample model, run here,
    in this process, so no worker is needed. The batch records that its endpoint is
    scripted, and every model message in it is labelled as sample text. The scripted
    model's routine is llm.scripted's, the same for every task: the demo has no script.

    The service also queues the rollouts for the workers when its transaction commits; a
    worker that gets one finds it finished and does nothing (the conditional claim)."""
    batch = RolloutBatch.objects.filter(env_task=env_task, endpoint_scripted=True).order_by("created_at").first()
    if batch is None:
        try:
            batch = rollout_batch_start(env_task=env_task, user=author, endpoint=endpoint, n=DEMO_BATCH_ROLLOUTS)
        except ApplicationError as error:  # e.g. an admin has disabled the scripted endpoint
            say(f"no sample trial batch: {error.message}")
            return
    # Also finishes a batch an interrupted earlier run left queued; nothing to do otherwise.
    queued = list(batch.rollouts.filter(status=RolloutStatus.QUEUED).values_list("pk", flat=True))
    for rollout_id in queued:
        rollout_execute(rollout_id=rollout_id)
    if queued:
        done = batch.rollouts.filter(status=RolloutStatus.COMPLETED).count()
        say(f"ran a batch of {len(queued)} trial rollouts of {env_task.title!r} on the scripted sample model "
            f"({done} completed; sample trajectories, not a model's work)")
