"""A project's admins manage its members on a page and over the API; every member gets the
token that scripts and MCP clients sign in with from a page of their own."""

import re

import pytest
from django.urls import reverse

from accounts.models import Membership, Role
from reviews.models import AuditEvent
from tests import factories


def page(client, team) -> str:
    return client.get(reverse("project-members", args=[team.project.pk])).content.decode()


def test_an_admin_adds_an_account_by_user_name_or_email_and_it_is_in_the_audit_trail(client, team):
    newcomer, other = factories.user("newcomer"), factories.user("other-reviewer")
    client.force_login(team.admin)
    html = client.get(reverse("project-detail", args=[team.project.pk])).content.decode()
    assert 'id="project-members-link"' in html

    response = client.post(reverse("member-add", args=[team.project.pk]), {"identifier": "Newcomer", "role": "author"}, follow=True)
    assert "newcomer is now a member of Corporate law — M&amp;A (author)." in response.content.decode()
    client.post(reverse("member-add", args=[team.project.pk]), {"identifier": other.email.upper(), "role": "reviewer"})
    assert Membership.objects.get(user=other, project=team.project).role == Role.REVIEWER
    html = page(client, team)
    assert "newcomer" in html and "other-reviewer" in html and "6 members" in html

    # The newcomer now sees the project; the audit trail says who added whom.
    client.force_login(newcomer)
    assert client.get(reverse("project-detail", args=[team.project.pk])).status_code == 200
    summaries = list(AuditEvent.objects.filter(project=team.project, verb="members_changed").values_list("summary", "actor"))
    assert summaries == [("Added newcomer as author", team.admin.pk), ("Added other-reviewer as reviewer", team.admin.pk)]
    client.force_login(team.admin)
    assert "Added newcomer as author" in client.get(reverse("project-audit", args=[team.project.pk])).content.decode()


def test_an_account_that_is_not_there_or_already_a_member_is_refused_with_what_to_do(client, team):
    client.force_login(team.admin)
    response = client.post(reverse("member-add", args=[team.project.pk]), {"identifier": "nobody-here", "role": "author"})
    html = response.content.decode()
    assert response.status_code == 422 and "No account has the user name or email “nobody-here”" in html
    assert "a site administrator" in html and 'value="nobody-here"' in html  # what was typed stays
    # User names differ by case only: the exact one is meant; as typed in another case, the page asks for it.
    factories.user("Casey"), factories.user("casey")
    client.post(reverse("member-add", args=[team.project.pk]), {"identifier": "casey", "role": "author"})
    assert Membership.objects.get(project=team.project, user__username="casey").role == Role.AUTHOR
    response = client.post(reverse("member-add", args=[team.project.pk]), {"identifier": "CASEY", "role": "author"})
    assert response.status_code == 422 and "give the exact user name instead" in response.content.decode()
    response = client.post(reverse("member-add", args=[team.project.pk]), {"identifier": team.reviewer.username, "role": "admin"})
    assert response.status_code == 422 and "is already a member here (reviewer)" in response.content.decode()
    assert Membership.objects.get(user=team.reviewer).role == Role.REVIEWER


def test_roles_change_and_members_go_but_the_project_keeps_an_admin(client, team):
    client.force_login(team.admin)
    author = Membership.objects.get(user=team.author)
    client.post(reverse("member-update", args=[author.pk]), {"role": "reviewer"})
    assert Membership.objects.get(pk=author.pk).role == Role.REVIEWER

    # The only admin: no role control and no remove on the page, and the server refuses both.
    only = Membership.objects.get(user=team.admin)
    html = page(client, team)
    row = re.search(rf'<tr id="member-{only.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "the only admin: make someone else admin" in row and "member-remove" not in row and "<select" not in row
    for url, data in ((reverse("member-update", args=[only.pk]), {"role": "author"}), (reverse("member-remove", args=[only.pk]), {})):
        response = client.post(url, data)
        assert response.status_code == 422 and "only admin: make someone else admin first" in response.content.decode()
    assert Membership.objects.get(pk=only.pk).role == Role.ADMIN

    # Once there is a second admin, the first may step down and lands on the project page.
    client.post(reverse("member-update", args=[Membership.objects.get(user=team.reviewer).pk]), {"role": "admin"})
    response = client.post(reverse("member-update", args=[only.pk]), {"role": "author"})
    assert response.status_code == 302 and response["Location"] == reverse("project-detail", args=[team.project.pk])
    assert client.get(reverse("project-members", args=[team.project.pk])).status_code == 404  # no longer an admin

    # Removing a member: they lose the project; what they wrote stays.
    world = factories.world(team.project, team.author2)
    client.force_login(team.reviewer)
    client.post(reverse("member-remove", args=[Membership.objects.get(user=team.author2).pk]))
    client.force_login(team.author2)
    assert client.get(reverse("project-detail", args=[team.project.pk])).status_code == 404
    world.refresh_from_db()
    assert world.created_by == team.author2


def test_a_bad_role_is_refused(client, team):
    client.force_login(team.admin)
    response = client.post(reverse("member-update", args=[Membership.objects.get(user=team.author).pk]), {"role": "owner"})
    assert response.status_code == 422 and "Choose a role: author, reviewer, admin." in response.content.decode()


# --- The API ---------------------------------------------------------------------------------

def token_for(client, user) -> str:
    client.force_login(user)
    html = client.post(reverse("api-token-show"), follow=True).content.decode()
    return re.search(r'id="token-value" value="([0-9a-f]+)"', html).group(1)


def test_the_members_api_lists_adds_changes_and_removes_for_admins_only(client, team):
    factories.user("api-newcomer")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token_for(client, team.admin)}"}
    client.logout()
    url = reverse("api-project-members", args=[team.project.pk])
    listed = client.get(url, **bearer).json()["results"]
    assert [m["username"] for m in listed][:1] == [team.admin.username] and {m["role"] for m in listed} == set(Role.values)

    added = client.post(url, {"identifier": "api-newcomer", "role": "reviewer"}, content_type="application/json", **bearer)
    assert added.status_code == 201 and added.json()["role"] == "reviewer"
    member = reverse("api-member", args=[added.json()["id"]])
    changed = client.patch(member, {"role": "author"}, content_type="application/json", **bearer)
    assert changed.status_code == 200 and changed.json()["role"] == "author"
    assert client.patch(member, {"role": "owner"}, content_type="application/json", **bearer).status_code == 400
    assert client.delete(member, **bearer).status_code == 204
    assert not Membership.objects.filter(user__username="api-newcomer").exists()

    only = reverse("api-member", args=[Membership.objects.get(user=team.admin).pk])
    refused = client.delete(only, **bearer)
    assert refused.status_code == 400 and "only admin" in refused.json()["detail"]

    # Other members (and outsiders) are not told the list exists.
    author = {"HTTP_AUTHORIZATION": f"Token {token_for(client, team.author)}"}
    client.logout()
    assert client.get(url, **author).status_code == 404
    assert client.delete(only, **author).status_code == 404
    assert Membership.objects.filter(project=team.project).count() == 4  # the team as it was


# --- The API token page ------------------------------------------------------------------

def test_the_token_page_shows_the_token_only_when_asked_and_revoking_refuses_it(client, team):
    client.force_login(team.author)
    html = client.get(reverse("api-token-page")).content.decode()
    assert "You have no token yet" in html and "Make my token" in html and 'id="token-value"' not in html
    token = token_for(client, team.author)
    shown = client.post(reverse("api-token-show"))
    assert shown.status_code == 302 and shown["Location"] == reverse("api-token-page")  # a reload resends nothing
    page = client.get(reverse("api-token-page"))
    assert page["Cache-Control"] == "no-store" and f"Authorization: Bearer {token}" in page.content.decode()
    assert 'id="token-value"' not in client.get(reverse("api-token-page")).content.decode()  # a reload hides it

    client.logout()
    for header in (f"Token {token}", f"Bearer {token}"):
        assert client.get(reverse("api-projects"), HTTP_AUTHORIZATION=header).status_code == 200
    client.force_login(team.author)
    client.post(reverse("api-token-revoke"))
    client.logout()
    assert client.get(reverse("api-projects"), HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


@pytest.mark.parametrize("name", ["api-token-show", "api-token-revoke"])
def test_the_token_page_is_for_signed_in_users(client, name):
    response = client.post(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
