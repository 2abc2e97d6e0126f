from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts import selectors, services
from accounts.forms import MemberAddForm
from accounts.models import Project, Role
from accounts.services import LOGIN_REFUSED_MESSAGE, login_allowed, login_failure_record
from core.exceptions import ApplicationError
from core.throttles import client_address
from core.views import render_error


class LoginView(auth_views.LoginView):
    """Django's login, rate-limited per address and username and per address across
    usernames (accounts.services; the cache is shared by every web process), and with
    ?next= kept on this site by Django's own check."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        address, username = client_address(request), request.POST.get("username") or ""
        if not login_allowed(address=address, username=username):
            form = self.get_form()
            response = render(request, self.template_name, {"form": form, "rate_limited": LOGIN_REFUSED_MESSAGE}, status=429)
            response["Retry-After"] = str(settings.LOGIN_RATE_LIMIT[1])
            return response
        response = super().post(request, *args, **kwargs)
        if response.status_code != 302:  # the form was invalid: a failed attempt
            login_failure_record(address=address, username=username)
        return response


# --- Members: a project's admins add accounts, change roles, remove members ----------------

ROLE_HELP = {
    Role.AUTHOR: "writes worlds, tasks and rubrics, runs trials, submits for review",
    Role.REVIEWER: "reviews submitted tasks in the queue; does not edit content",
    Role.ADMIN: "everything, plus packs, review settings, the audit trail and members",
}


def _members_context(project: Project, form: MemberAddForm | None = None) -> dict:
    members = list(selectors.project_members(project_id=project.pk))
    return {"project": project, "members": members, "form": form or MemberAddForm(), "roles": Role.choices,
            "role_help": [(label, ROLE_HELP[value]) for value, label in Role.choices],
            "only_admin": sum(m.role == Role.ADMIN for m in members) == 1}


@require_GET
def project_members(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = selectors.project_admin_get(user=request.user, project_id=project_pk).project
    return render(request, "accounts/project_members.html", _members_context(project))


@require_POST
def member_add(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = selectors.project_admin_get(user=request.user, project_id=project_pk).project
    form = MemberAddForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError("Give a user name or email and a role.")
        added = services.member_add(project=project, by=request.user, identifier=form.cleaned_data["identifier"],
                                    role=form.cleaned_data["role"])
    except ApplicationError as error:
        return render_error(request, "accounts/project_members.html", _members_context(project, form), error)
    messages.success(request, f"{added.user.username} is now a member of {project.name} ({added.get_role_display().lower()}).")
    return redirect("project-members", project_pk=project.pk)


@require_POST
def member_update(request: HttpRequest, pk: int) -> HttpResponse:
    membership = selectors.member_get_for_admin(user=request.user, pk=pk)
    try:
        changed = services.member_role_change(membership=membership, by=request.user, role=request.POST.get("role", ""))
    except ApplicationError as error:
        return render_error(request, "accounts/project_members.html", _members_context(membership.project), error)
    messages.success(request, f"{changed.user.username} is now {changed.get_role_display().lower()}.")
    if changed.user_id == request.user.pk and changed.role != Role.ADMIN:
        return redirect("project-detail", pk=membership.project_id)  # no longer an admin: the members page is gone
    return redirect("project-members", project_pk=membership.project_id)


@require_POST
def member_remove(request: HttpRequest, pk: int) -> HttpResponse:
    membership = selectors.member_get_for_admin(user=request.user, pk=pk)
    project, username, self_removed = membership.project, membership.user.username, membership.user_id == request.user.pk
    try:
        services.member_remove(membership=membership, by=request.user)
    except ApplicationError as error:
        return render_error(request, "accounts/project_members.html", _members_context(project), error)
    messages.success(request, f"{username} is no longer a member of {project.name}.")
    if self_removed:
        return redirect("dashboard")
    return redirect("project-members", project_pk=project.pk)


# --- The user's own API token ------------------------------------------------------------------

@require_GET
def api_token(request: HttpRequest) -> HttpResponse:
    """The token page. The token itself shows only on the first load after "Show my token"
    (a flag the POST leaves in the session), so a reload or a later visit hides it again."""
    key = selectors.api_token_key(user=request.user)
    context = {"has_token": key is not None}
    if request.session.pop("show_api_token", False) and key is not None:
        context |= {"token": key, "mcp_url": request.build_absolute_uri("/mcp/")}
    response = render(request, "accounts/api_token.html", context)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def api_token_show(request: HttpRequest) -> HttpResponse:
    services.api_token_issue(user=request.user)  # made on first request
    request.session["show_api_token"] = True
    return redirect("api-token-page")


@require_POST
def api_token_revoke(request: HttpRequest) -> HttpResponse:
    if services.api_token_revoke(user=request.user):
        messages.success(request, "Your API token is revoked: scripts and agents that used it are refused from now on.")
    return redirect("api-token-page")
