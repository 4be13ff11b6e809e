"""The one gate between a caller's words and the world outside the store.

Everything a caller names that reaches outside Convener's own store (a file, a folder, a database URL, a URL,
a Python callable, a command) is checked here, and every size a caller controls has its limit in
``limits``. Services ask the gate; none decides on its own.
"""
