"""Finding one's way: the task page in tabs, New task on the project page, Packs in the
navigation for admins, the user menu (API, Notifications, Sign out)."""

import html
import re

import pytest
from django.urls import reverse

from accounts.models import Role
from authoring.models import EnvTask
from tests import factories

HX = {"HTTP_HX_REQUEST": "true"}
TABS = {
    "prompt": "Prompt & rubric", "trials": "Trials", "verifier": "Verifier quality", "review": "Review", "history": "History",
}


def page_of(response) -> str:
    assert response.status_code == 200, response.status_code
    return html.unescape(response.content.decode())


def tab_link(page: str, key: str) -> str:
    return re.search(rf'<a role="tab"[^>]*id="tab-{key}"[^>]*>', page).group(0)


def panel(page: str, key: str) -> str:
    return re.search(rf'<section class="tab-panel" role="tabpanel" id="panel-{key}"[^>]*>', page).group(0)


@pytest.mark.parametrize("key", list(TABS))
def test_each_tab_link_opens_the_page_with_that_tab_selected_and_its_panel_shown(client, team, env_task, key):
    client.force_login(team.author)
    page = page_of(client.get(reverse("task-editor", args=[env_task.pk]) + f"?tab={key}"))
    assert 'role="tablist"' in page
    for other, label in TABS.items():
        link = tab_link(page, other)
        assert f'href="?tab={other}"' in link and f'aria-controls="panel-{other}"' in link
        assert f">{label}</a>" in page
        selected = other == key
        assert (f'aria-selected="{"true" if selected else "false"}"' in link), (other, link)
        assert (f'tabindex="{"0" if selected else "-1"}"' in link)
        assert ("hidden" not in panel(page, other)) == selected, (other, panel(page, other))


def test_the_selected_tab_loads_its_panel_on_load_and_the_others_when_first_shown(client, team, env_task):
    client.force_login(team.author)
    page = page_of(client.get(reverse("task-editor", args=[env_task.pk]) + "?tab=trials"))
    trials = re.search(r'<div id="task-trials"[^>]*>', page).group(0)
    assert f'hx-get="{reverse("task-trials", args=[env_task.pk])}"' in trials and 'hx-trigger="load"' in trials
    verifier = re.search(r'<div id="task-verifier"[^>]*>', page).group(0)
    assert 'hx-trigger="tab-shown once, criteria-changed from:body"' in verifier  # still reloads when the criteria change
    history = re.search(r'<div id="task-history"[^>]*>', page).group(0)
    assert f'hx-get="{reverse("task-audit", args=[env_task.pk])}"' in history and "tab-shown once" in history
    reviews = re.search(r'<div id="task-reviews"[^>]*>', page).group(0)
    assert "tab-shown once" in reviews and 'hx-trigger="load"' not in reviews


def test_the_history_tab_loads_the_task_audit_partial(client, team, env_task):
    client.force_login(team.author)
    fragment = page_of(client.get(reverse("task-audit", args=[env_task.pk]), **HX))
    assert fragment.lstrip().startswith('<section class="card" id="task-audit">') and "<html" not in fragment


def test_an_unknown_tab_shows_the_first_one_and_the_prompt_is_there(client, team, env_task):
    client.force_login(team.author)
    page = page_of(client.get(reverse("task-editor", args=[env_task.pk]) + "?tab=../../etc"))
    assert 'aria-selected="true"' in tab_link(page, "prompt") and "hidden" not in panel(page, "prompt")
    assert 'id="task-form"' in page and env_task.prompt in page and 'id="rubric"' in page


def test_a_task_sent_back_points_the_author_to_the_review_tab(client, team, env_task):
    EnvTask.objects.filter(pk=env_task.pk).update(status="changes_requested")
    client.force_login(team.author)
    page = page_of(client.get(reverse("task-editor", args=[env_task.pk])))
    assert re.search(r'id="feedback-hint">A reviewer sent this task back\. <a href="\?tab=review">', page)
    assert 'id="feedback-hint"' not in page_of(client.get(reverse("task-editor", args=[env_task.pk]) + "?tab=review"))


def test_task_page_of_another_project_is_404(client, other_team, env_task):
    client.force_login(other_team.admin)
    assert client.get(reverse("task-editor", args=[env_task.pk]) + "?tab=history").status_code == 404


# --- New task on the project page ------------------------------------------------------

def test_new_task_button_creates_a_task_on_the_chosen_world(client, team, world):
    second = factories.world(team.project, team.author, title="Gamma buys Delta", documents=0)
    client.force_login(team.author)
    page = page_of(client.get(reverse("project-detail", args=[team.project.pk])))
    form = re.search(r'<form class="card new-task" id="new-task".*?</form>', page, re.S).group(0)
    assert f'action="{reverse("project-task-create", args=[team.project.pk])}"' in form
    assert "World it is set in" in form and f'<option value="{second.pk}">Gamma buys Delta</option>' in form
    assert '<button type="submit">New task</button>' in form
    response = client.post(reverse("project-task-create", args=[team.project.pk]), {"world": second.pk, "title": "Find the escrow"})
    env_task = EnvTask.objects.get(title="Find the escrow")
    assert response.status_code == 302 and response["Location"] == reverse("task-editor", args=[env_task.pk])
    assert (env_task.world_id, env_task.project_id, env_task.created_by_id, env_task.status) == (
        second.pk, team.project.pk, team.author.pk, "draft"
    )


def test_new_task_without_a_title_says_so_and_keeps_nothing(client, team, world):
    client.force_login(team.author)
    response = client.post(reverse("project-task-create", args=[team.project.pk]), {"world": world.pk, "title": ""})
    assert response.status_code == 422
    assert "Give the task a title." in page_of_any(response) and not EnvTask.objects.exists()


def test_new_task_cannot_use_another_projects_world(client, team, other_team):
    foreign = factories.world(other_team.project, other_team.author, documents=0)
    client.force_login(team.author)
    response = client.post(reverse("project-task-create", args=[team.project.pk]), {"world": foreign.pk, "title": "Sneaky"})
    assert response.status_code == 422 and "Choose one of this project's worlds" in page_of_any(response)
    assert not EnvTask.objects.exists()


def test_new_task_is_refused_to_a_reviewer_and_hidden_from_outsiders(client, team, other_team, world):
    url = reverse("project-task-create", args=[team.project.pk])
    client.force_login(team.reviewer)
    assert 'id="new-task"' not in page_of(client.get(reverse("project-detail", args=[team.project.pk])))
    assert client.post(url, {"world": world.pk, "title": "Reviewer's task"}).status_code == 403
    client.force_login(other_team.author)
    assert client.post(url, {"world": world.pk, "title": "Outsider's task"}).status_code == 404
    assert not EnvTask.objects.exists()


def test_project_without_a_world_says_to_create_one_first(client, team):
    client.force_login(team.author)
    page = page_of(client.get(reverse("project-detail", args=[team.project.pk])))
    assert 'id="new-task"' not in page and "create a world above first" in page


def page_of_any(response) -> str:
    return html.unescape(response.content.decode())


# --- Top navigation: Packs for admins, the user menu -------------------------------------

def nav(page: str) -> str:
    return re.search(r'<header class="topbar">.*?</header>', page, re.S).group(0)


def test_packs_in_the_navigation_for_the_admin_of_one_project_leads_to_its_packs(client, team):
    client.force_login(team.admin)
    top = nav(page_of(client.get(reverse("dashboard"))))
    assert f'<a href="{reverse("pack-list", args=[team.project.pk])}" id="nav-packs">Packs</a>' in top


@pytest.mark.parametrize("role", ["author", "reviewer"])
def test_no_packs_in_the_navigation_for_non_admins(client, team, role):
    client.force_login(getattr(team, role))
    top = nav(page_of(client.get(reverse("dashboard"))))
    assert "nav-packs" not in top and ">Packs<" not in top


def test_an_admin_of_several_projects_gets_the_page_listing_their_packs(client, team, other_team):
    from accounts.models import Membership
    from packs.models import Pack
    Membership.objects.create(project=other_team.project, user=team.admin, role=Role.ADMIN)
    Pack.objects.create(project=team.project, name="first-release", version=1, created_by=team.admin)
    Pack.objects.create(project=other_team.project, name="other-release", version=1, created_by=other_team.admin)
    hidden = factories.project("Not mine")
    Pack.objects.create(project=hidden, name="hidden-release", version=1)
    client.force_login(team.admin)
    top = nav(page_of(client.get(reverse("dashboard"))))
    assert f'<a href="{reverse("pack-index")}" id="nav-packs">Packs</a>' in top
    page = page_of(client.get(reverse("pack-index")))
    assert "first-release v1" in page and "other-release v1" in page and "hidden-release" not in page
    assert f'href="{reverse("pack-list", args=[other_team.project.pk])}"' in page
    filtered = page_of(client.get(reverse("pack-index") + "?q=other"))
    assert "other-release" in filtered and "first-release" not in filtered


def test_pack_index_for_someone_who_administers_nothing_says_who_builds_packs(client, team):
    client.force_login(team.author)
    assert "Packs are built by a project's admins" in page_of(client.get(reverse("pack-index")))


def test_user_menu_holds_api_notifications_and_sign_out_and_the_bell_stays(client, team):
    client.force_login(team.author)
    top = nav(page_of(client.get(reverse("dashboard"))))
    menu = re.search(r'<details class="user-menu" id="user-menu">.*?</details>', top, re.S).group(0)
    assert f"</span>{team.author.username}</summary>" in menu
    assert f'<a href="{reverse("api-docs")}" id="menu-api">API</a>' in menu
    assert f'<a href="{reverse("notifications")}">Notifications</a>' in menu
    assert f'action="{reverse("logout")}"' in menu and ">Sign out</button>" in menu
    main_nav = re.search(r"<nav>.*?</nav>", top, re.S).group(0)
    assert reverse("api-docs") not in main_nav  # the API link moved out of the main navigation
    bell = re.search(r'<a id="notification-bell"[^>]*>', top).group(0)
    assert 'aria-label="Notifications, none unread"' in bell and "user-menu" not in bell
    assert top.index('id="notification-bell"') < top.index('id="user-menu"')  # the bell is outside the menu


def test_signing_out_from_the_user_menu(client, team):
    client.force_login(team.author)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302  # signed out: sent to sign in
