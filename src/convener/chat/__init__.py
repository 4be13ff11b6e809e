"""The chat service: team chat spaces, threads and messages, imported from exports or posted live."""
