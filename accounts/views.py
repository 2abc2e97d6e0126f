from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

RATE_LIMIT_MESSAGE = "Too many failed sign-in attempts. Wait 15 minutes and try again."


def _login_key(request: HttpRequest) -> str:
    ip = request.META.get("REMOTE_ADDR", "?")
    username = (request.POST.get("username") or "").lower()[:150]
    return f"login-failures:{ip}:{username}"


class LoginView(auth_views.LoginView):
    """Django's login, rate-limited per address and username (the cache is shared by
    every web process), and with ?next= kept on this site by Django's own check."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        limit, window = settings.LOGIN_RATE_LIMIT
        key = _login_key(request)
        if cache.get(key, 0) >= limit:
            form = self.get_form()
            return render(request, self.template_name, {"form": form, "rate_limited": RATE_LIMIT_MESSAGE}, status=429)
        response = super().post(request, *args, **kwargs)
        if response.status_code != 302:  # the form was invalid: a failed attempt
            try:
                cache.incr(key)
            except ValueError:
                cache.set(key, 1, window)
        return response
