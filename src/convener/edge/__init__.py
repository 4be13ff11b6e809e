"""The HTTP edge of the MCP endpoints: what reaches the server before a tool runs, and what leaves it when
something below fails.

``jsonrpc`` checks each request's envelope (method, size, depth, id) where the MCP SDK leaves it open;
``errors`` turns anything that escapes below into a JSON-RPC error object with a google.rpc code.
"""
