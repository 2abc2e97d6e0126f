"""Typed builders for test data. They go through the services where a service exists,
so tests start from states the product itself can reach."""

import itertools

from accounts.models import Membership, Project, Role, User
from authoring import services as authoring_services
from authoring.models import Document, EnvTask, World

_seq = itertools.count(1)

PASSWORD = "correct-horse-battery-staple"


def user(username: str | None = None) -> User:
    username = username or f"user{next(_seq)}"
    return User.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.test")


def project(name: str | None = None) -> Project:
    n = next(_seq)
    return Project.objects.create(name=name or f"Project {n}", slug=f"project-{n}")


def member(project: Project, role: str = Role.AUTHOR, username: str | None = None) -> User:
    u = user(username)
    Membership.objects.create(project=project, user=u, role=role)
    return u


def world(project: Project, author: User, *, title: str = "Acme acquires Beta", documents: int = 2, drafted: bool = False) -> World:
    """A world with `documents` skeleton documents, or with content when `drafted` (a world a pack can hold)."""
    w = authoring_services.world_create(
        project_id=project.pk,
        user=author,
        title=title,
        outline="Acme Corp is buying **Beta Ltd** for $12m.",
        facts=[{"key": "Price", "value": "$12m"}, {"key": "Closing", "value": "2026-03-31"}],
    )
    for i in range(documents):
        authoring_services.document_create(world=w, user=author, path=f"Deal/Doc {i + 1}.md", brief=f"Document {i + 1}",
                                           content=f"# Document {i + 1}\n\nThe price is $12m.\n" if drafted else "")
    return w


def env_task(world: World, author: User, *, title: str = "Summarise the LOI", criteria: int = 2) -> EnvTask:
    t = authoring_services.env_task_create(
        world=world,
        user=author,
        title=title,
        prompt="Read the data room and state the purchase price.",
        reference_answer="The price is $12m.",
    )
    for i in range(criteria):
        rubric = t.rubric_versions.order_by("-number").first()
        authoring_services.criterion_add(env_task=t, user=author, base_revision=rubric.revision, text=f"States fact {i + 1}", points=5 - i)
    t.refresh_from_db()
    return t


def document(world: World, author: User, path: str = "Notes/readme.md") -> Document:
    return authoring_services.document_create(world=world, user=author, path=path)


def checklist(project_id: int, *, fail: tuple[int, ...] = ()) -> list:
    """A reviewer's answers to every item of the project's checklist: all pass, except the
    items at the positions in `fail` (0-based)."""
    from reviews.selectors import checklist_items
    from reviews.services import ChecklistMark, checklist_ensure

    checklist_ensure(project_id=project_id)
    return [ChecklistMark(item_id=item.pk, passed=i not in fail, note="" if i not in fail else "Not yet.")
            for i, item in enumerate(checklist_items(project_id=project_id))]
