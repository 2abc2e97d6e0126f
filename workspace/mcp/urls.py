from django.urls import re_path

from workspace.mcp import http

# The trailing slash is optional: an MCP client POSTs to the URL it was given, and a
# redirect that adds the slash would drop the body.
urlpatterns = [
    re_path(r"^worlds/(?P<world_id>[0-9]+)/?$", http.world_endpoint, name="mcp-world"),
    re_path(r"^overlays/(?P<overlay_id>[0-9]+)/?$", http.overlay_endpoint, name="mcp-overlay"),
]
