"""The web console: server-rendered pages over the same services and access checks as the MCP tools.

Served at ``/console`` by ``convener serve``. Pages are Jinja2 templates (autoescaped: whatever a caller
recorded is shown as text), styled by one vendored-free stylesheet, with no script needed to read them.
Every view calls a tool's handler through ``console.access`` with the signed-in caller, so a key's scopes
mean here exactly what they mean over MCP, and no view reads the store itself.
"""
