"""The demo's content, read from its data folder at seed time: demo/data, or a copy of it
given to `seed_demo --data`. An expert edits the demo by editing those files; the layout
is described in demo/data/README.md.

A text file's characters are the content exactly (a document's, the outline's, the
prompt's): nothing is stripped or added, so a chat message saved without a final newline
is seeded without one. Files are read in text mode, so a checkout with CRLF line ends
still seeds LF. Only the shape is checked here; the authoring services that create the
objects check the values (kinds, tags, formats, metadata) as they do for any other input.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from accounts.models import Role
from core.exceptions import ApplicationError

DATA_DIR = Path(__file__).resolve().parent / "data"

CRITERION_KEYS = {"text", "points", "tag", "explanation", "grader_kind", "grader_config", "evidence"}


@dataclass(frozen=True)
class DemoUser:
    username: str
    role: Role
    first_name: str


@dataclass(frozen=True)
class DemoDocument:
    path: str
    kind: str
    brief: str
    target_size: int
    metadata: dict
    content: str


@dataclass(frozen=True)
class DemoContent:
    project_name: str
    project_slug: str
    project_description: str
    users: tuple[DemoUser, ...]
    world_title: str
    world_outline: str
    world_facts: list[dict]
    documents: tuple[DemoDocument, ...]
    task_title: str
    task_deliverable_kind: str
    task_prompt: str
    task_reference_answer: str
    criteria: tuple[dict, ...]  # keyword arguments of authoring's criterion_add, in rubric order
    task_input_files: tuple[tuple[str, bytes], ...] = ()  # (path, bytes): files the agent receives with the task

    def first_with_role(self, role: Role) -> DemoUser:
        return next(u for u in self.users if u.role == role)


def demo_content_load(*, data_dir: Path = DATA_DIR) -> DemoContent:
    """Read project.json, world/world.json and task/task.json, and the text files they name."""
    project = _json(data_dir / "project.json", required={"name", "slug", "description", "users"})
    world_dir, task_dir = data_dir / "world", data_dir / "task"
    world = _json(world_dir / "world.json", required={"title", "outline_file", "facts", "documents"})
    task = _json(task_dir / "task.json", required={"title", "deliverable_kind", "prompt_file", "reference_answer_file", "criteria"},
                 optional={"input_files"})
    users = tuple(_user(row) for row in project["users"])
    for role in (Role.AUTHOR, Role.ADMIN):  # the author writes the world and task, the admin owns the project
        if not any(u.role == role for u in users):
            raise ApplicationError(f"demo data: project.json needs a user with the role {role.value!r}.")
    return DemoContent(
        project_name=project["name"],
        project_slug=project["slug"],
        project_description=project["description"],
        users=users,
        world_title=world["title"],
        world_outline=_text(world_dir, world["outline_file"]),
        world_facts=world["facts"],
        documents=tuple(_document(world_dir, row) for row in world["documents"]),
        task_title=task["title"],
        task_deliverable_kind=task["deliverable_kind"],
        task_prompt=_text(task_dir, task["prompt_file"]),
        task_reference_answer=_text(task_dir, task["reference_answer_file"]),
        criteria=tuple(
            _keys(row, "a criterion in task/task.json", required={"text", "points", "tag"}, optional=CRITERION_KEYS)
            for row in task["criteria"]
        ),
        task_input_files=tuple(_input_file(task_dir, row) for row in task.get("input_files", [])),
    )


def _user(row: dict) -> DemoUser:
    _keys(row, "a user in project.json", required={"username", "role", "first_name"})
    if row["role"] not in Role.values:
        raise ApplicationError(f"demo data: user {row['username']!r} has the role {row['role']!r}; roles are {', '.join(Role.values)}.")
    return DemoUser(username=row["username"], role=Role(row["role"]), first_name=row["first_name"])


def _document(world_dir: Path, row: dict) -> DemoDocument:
    _keys(row, "a document in world/world.json", required={"path", "kind", "content_file", "brief", "target_size"}, optional={"metadata"})
    return DemoDocument(
        path=row["path"], kind=row["kind"], brief=row["brief"], target_size=row["target_size"], metadata=row.get("metadata", {}),
        content=_text(world_dir, row["content_file"]),
    )


def _input_file(task_dir: Path, row: dict) -> tuple[str, bytes]:
    _keys(row, "an input file in task/task.json", required={"path", "content_file"})
    return row["path"], _bytes(task_dir, row["content_file"])


def _json(path: Path, *, required: set[str], optional: set[str] = frozenset()) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ApplicationError(f"demo data: cannot read {path}: {error}") from error
    return _keys(data, str(path), required=required, optional=optional)


def _inside(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.resolve().is_relative_to(folder.resolve()):
        raise ApplicationError(f"demo data: {name!r} is outside {folder}.")
    return path


def _text(folder: Path, name: str) -> str:
    path = _inside(folder, name)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ApplicationError(f"demo data: cannot read {path}: {error}") from error


def _bytes(folder: Path, name: str) -> bytes:
    """A file as it is: an input file is stored byte for byte, as an upload would be."""
    path = _inside(folder, name)
    try:
        return path.read_bytes()
    except OSError as error:
        raise ApplicationError(f"demo data: cannot read {path}: {error}") from error


def _keys(row: object, where: str, *, required: set[str], optional: set[str] = frozenset()) -> dict:
    """The row itself, once it has every required key and no unknown one (a typo would
    otherwise be dropped without a word)."""
    if not isinstance(row, dict):
        raise ApplicationError(f"demo data: {where} is not a JSON object.")
    missing, unknown = sorted(required - row.keys()), sorted(row.keys() - required - optional)
    if missing:
        raise ApplicationError(f"demo data: {where} lacks {', '.join(missing)}.")
    if unknown:
        raise ApplicationError(f"demo data: {where} has unknown keys {', '.join(unknown)}.")
    return row
