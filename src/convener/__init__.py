"""Convener: self-hosted MCP servers for conversational-agent teams."""

__version__ = "0.1.0"
