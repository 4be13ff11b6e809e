"""The agent runtime: what runs an app's agents and tools for a session."""
