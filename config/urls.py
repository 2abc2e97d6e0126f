from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    path("mcp/", include("workspace.mcp.urls")),  # MCP over streamable HTTP (token-authenticated)
    path("", include("accounts.urls")),
    path("", include("authoring.urls")),
    path("", include("rollouts.urls")),
    path("", include("verification.urls")),
    path("", include("reviews.urls")),
    path("", include("packs.urls")),
    path("", include("llm.urls")),
    path("", include("workspace.urls")),
]

# JSON errors under /api/ and /mcp/, Django's pages elsewhere (core.views).
handler400 = "core.views.bad_request"
handler403 = "core.views.permission_denied"
handler404 = "core.views.page_not_found"
handler500 = "core.views.server_error"
