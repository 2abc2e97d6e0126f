from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import path

from accounts import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    # Signing out while signed out lands on the sign-in page, not on a sign-in that comes
    # back to /logout/. (Django's LoginView is exempt already.)
    path("logout/", login_not_required(auth_views.LogoutView.as_view()), name="logout"),
    path("projects/<int:project_pk>/members/", views.project_members, name="project-members"),
    path("projects/<int:project_pk>/members/add/", views.member_add, name="member-add"),
    path("members/<int:pk>/role/", views.member_update, name="member-update"),
    path("members/<int:pk>/remove/", views.member_remove, name="member-remove"),
    path("account/api-token/", views.api_token, name="api-token-page"),
    path("account/api-token/show/", views.api_token_show, name="api-token-show"),
    path("account/api-token/revoke/", views.api_token_revoke, name="api-token-revoke"),
]
