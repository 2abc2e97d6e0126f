from dataclasses import dataclass

import pytest

from accounts.models import Project, Role, User
from tests import factories


@dataclass
class Team:
    project: Project
    author: User
    author2: User
    reviewer: User
    admin: User


@pytest.fixture
def team(db) -> Team:
    project = factories.project("Corporate law — M&A")
    return Team(
        project=project,
        author=factories.member(project, Role.AUTHOR),
        author2=factories.member(project, Role.AUTHOR),
        reviewer=factories.member(project, Role.REVIEWER),
        admin=factories.member(project, Role.ADMIN),
    )


@pytest.fixture
def other_team(db) -> Team:
    project = factories.project("Other project")
    return Team(
        project=project,
        author=factories.member(project, Role.AUTHOR),
        author2=factories.member(project, Role.AUTHOR),
        reviewer=factories.member(project, Role.REVIEWER),
        admin=factories.member(project, Role.ADMIN),
    )


@pytest.fixture
def world(team):
    return factories.world(team.project, team.author)


@pytest.fixture
def env_task(team, world):
    return factories.env_task(world, team.author)
