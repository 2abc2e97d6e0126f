from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import path

from accounts import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    # Signing out while signed out lands on the sign-in page, not on a sign-in that comes
    # back to /logout/. (Django's LoginView is exempt already.)
    path("logout/", login_not_required(auth_views.LogoutView.as_view()), name="logout"),
]
