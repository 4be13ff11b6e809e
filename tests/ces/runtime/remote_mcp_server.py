"""The MCP server the toolset tests talk to: run as a script it serves stdio; ``build()`` gives it for HTTP.

It stands for someone else's server, so it is written against the SDK only, not against Convener.
"""

from __future__ import annotations

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build() -> MCPServer:
    server = MCPServer("remote-tools", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool(structured_output=False)
    def shout(text: str) -> str:
        """Returns the text in capitals, as plain text content."""
        return text.upper()

    @server.tool()
    def explode(reason: str) -> str:
        """Always fails, with a message meant for the model."""
        raise ToolError(f"exploded because {reason}")

    @server.tool()
    async def dawdle(seconds: float) -> str:
        """Takes its time."""
        await anyio.sleep(seconds)
        return "done"

    return server


if __name__ == "__main__":
    build().run()
