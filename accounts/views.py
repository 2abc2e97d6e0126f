from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.services import LOGIN_REFUSED_MESSAGE, login_allowed, login_failure_record
from core.throttles import client_address


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
