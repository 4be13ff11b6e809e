"""The process's folder for DuckDB's spill files, inside the data dir: ``<data dir>/analytics-tmp/<id>/``.

A DuckDB data source that passes its memory limit writes to disk there (each database in a folder of its
own, ``Budget.duckdb_config``), never next to a database file or in the working directory. The folder is
made when the first DuckDB database asks for it (a process that never runs a DuckDB query leaves no trace in
the data dir) and removed on close. A process that was killed cannot remove its own, so opening one also removes the folders
of processes that are gone: each process holds an ``flock`` on its folder's lock file for as long as it
runs, and the kernel drops the lock when the process dies, however it dies (a PID can be reused; a lock
cannot outlive its process). Folders DuckDB made by itself next to a database file in the data dir
(``demo.duckdb.tmp/``, before the spill folder was set), holding nothing but its temporary files, go too.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import uuid
from pathlib import Path

SPILL_DIR = "analytics-tmp"
LOCK_SUFFIX = ".lock"


class SpillFolder:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / SPILL_DIR
        name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._lock_path = self.root / (name + LOCK_SUFFIX)
        self._lock = -1
        self._made = threading.Lock()
        self.path = self.root / name

    def ensure(self) -> Path:
        """The folder, made (and the folders of processes that are gone removed) on the first call."""
        with self._made:
            if self._lock < 0:
                self.root.mkdir(parents=True, exist_ok=True)
                self._lock = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.path.mkdir(mode=0o700, exist_ok=True)
                remove_stale(self.root)
                remove_beside_databases(self.data_dir)
        return self.path

    def close(self) -> None:
        with self._made:
            if self._lock < 0:
                return
            shutil.rmtree(self.path, ignore_errors=True)
            self._lock_path.unlink(missing_ok=True)
            os.close(self._lock)
            self._lock = -1


DUCKDB_TEMP_FILE = "duckdb_temp_"


def remove_beside_databases(data_dir: Path) -> list[str]:
    """Remove DuckDB's own ``<database>.tmp`` folders in ``data_dir`` that hold only its temporary files."""
    removed = []
    for entry in sorted(data_dir.glob("*.duckdb.tmp")):
        if entry.is_symlink() or not entry.is_dir():
            continue
        if all(item.is_file() and item.name.startswith(DUCKDB_TEMP_FILE) for item in entry.iterdir()):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def remove_stale(root: Path) -> list[str]:
    """Remove the folders under ``root`` whose process is gone (their lock file is free); their names."""
    removed = []
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(LOCK_SUFFIX) or not entry.is_dir() or entry.is_symlink():
            continue
        lock_path = root / (entry.name + LOCK_SUFFIX)
        try:
            handle = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            continue  # Its process is still running.
        shutil.rmtree(entry, ignore_errors=True)
        lock_path.unlink(missing_ok=True)
        os.close(handle)
        removed.append(entry.name)
    return removed
