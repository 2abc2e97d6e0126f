"""The workspace tools as an MCP server (official `mcp` SDK), on two transports:

- stdio: `manage.py mcp_world <world id> [--overlay <overlay id>]` (server.run_stdio);
- streamable HTTP under the web app: /mcp/worlds/<id>/ (read-only) and
  /mcp/overlays/<id>/ (writable for authors and admins), authenticated with an API
  token and scoped by the same selectors as the pages (http.py).

Importing the SDK takes seconds (it builds its protocol models at import), so nothing
here imports it until an MCP server is actually built: the URLconf, and so every web
process and test, stays as quick to start as before.
"""
