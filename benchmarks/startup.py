"""Benchmark of the CLI's start-up: ``convener --help`` and a few commands against ``python -c pass``.

Run from the repository root::

    .venv/bin/python benchmarks/startup.py [--repeat 11] [--backend sqlite|postgresql|both]
        [--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

Every command runs as a fresh process (``python -m convener ...``, as the ``convener`` script runs it), and
each figure is the median of ``--repeat`` runs, after one run not counted (it writes any bytecode cache missing and
migrates the store). For each command it prints:

* the wall time, in seconds, and its ratio to ``python -c pass`` measured in the same run (the floor: the
  interpreter's own start);
* the CPU time (user + system) the process spent;
* the packages it imported that cost the most (one more run with ``python -X importtime``, self times summed
  by top-level package; Convener's own modules by subpackage, e.g. ``convener.ces``).

Help screens touch no store and are measured once. Commands that read the store are measured on each backend
chosen, on a store of their own (a SQLite file; a private PostgreSQL schema, dropped at the end). A
one-command typer app's ``--help`` is shown as well: what any typer CLI costs, which ``convener --help``
cannot go below. Nothing is asserted about timings; a command that fails is an error.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass

from backends import add_arguments, each_backend, postgres_reachable

TYPER_FLOOR = (
    "import typer\n"
    "app = typer.Typer(help='One command.', no_args_is_help=True)\n"
    "@app.command()\n"
    "def one(count: int = 1) -> None:\n"
    "    '''Do one thing.'''\n"
    "app()\n"
)
HELP_SCREENS: list[tuple[str, list[str]]] = [
    ("convener --help", ["--help"]),
    ("convener eval --help", ["eval", "--help"]),
    ("convener eval run --help", ["eval", "run", "--help"]),
    ("convener chat --help", ["chat", "--help"]),
    ("convener data ask --help", ["data", "ask", "--help"]),
]
STORE_COMMANDS: list[tuple[str, list[str]]] = [
    ("convener jobs", ["jobs"]),
    ("convener auth list-keys", ["auth", "list-keys"]),
    ("convener knowledge sources", ["knowledge", "sources"]),
    ("convener data sources", ["data", "sources"]),
]
SHOWN_PACKAGES = 6
"""The costliest imported packages listed per command."""


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def run_once(argv: list[str], env: dict[str, str]) -> Timing:
    """One process's wall and CPU time (user + system of the child, from the kernel's accounting)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(argv[1:])} exited {completed.returncode}:\n{completed.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def median_timing(argv: list[str], env: dict[str, str], repeat: int) -> Timing:
    run_once(argv, env)  # not counted: bytecode caches, the store's migration
    timings = [run_once(argv, env) for _ in range(repeat)]
    return Timing(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings))


def package_of(module: str) -> str:
    """The bucket an import counts in: its top-level package, or Convener's subpackage."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "convener" and len(parts) > 1 else parts[0]


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[tuple[str, float]]:
    """The packages a run imports, costliest first, with their summed self times in seconds."""
    completed = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, capture_output=True, text=True,
                               timeout=300)
    costs: dict[str, float] = defaultdict(float)
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        if own.strip().isdigit():  # the header line says "self [us]"
            costs[package_of(name.strip())] += int(own) / 1e6
    return sorted(costs.items(), key=lambda item: -item[1])


def report(label: str, argv: list[str], env: dict[str, str], repeat: int, floor: Timing) -> None:
    timing = median_timing(argv, env, repeat)
    shown = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in heavy_imports(argv, env)[:SHOWN_PACKAGES])
    print(f"  {label:<30}{timing.wall:>8.3f} s{timing.wall / floor.wall:>8.1f}× python -c pass"
          f"{timing.cpu:>9.3f} s cpu")
    print(f"  {'':<30}imports: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=11, help="Runs per command; the median is shown.")
    add_arguments(parser)
    args = parser.parse_args()
    if args.backend in ("postgresql", "both") and not postgres_reachable(args.postgres_url):
        print(f"PostgreSQL at {args.postgres_url} does not answer: SQLite alone")
        args.backend = "sqlite"
    python = sys.executable
    convener = [python, "-m", "convener"]
    with tempfile.TemporaryDirectory() as data_dir:
        # As an installation runs: with the bytecode caches pip wrote beside the packages (a cache prefix would
        # make the first run compile every package again), whatever this shell says.
        env = {key: value for key, value in os.environ.items()
               if not key.startswith("CONVENER_") and key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        env.update(CONVENER_DATA_DIR=data_dir, COLUMNS="100")
        floor = median_timing([python, "-c", "pass"], env, args.repeat)
        print(f"\n=== start-up, no store: median of {args.repeat} runs; floor python -c pass {floor.wall:.3f} s ===")
        print(f"  {'command':<30}{'wall':>10}{'ratio':>8}{'':<16}{'cpu':>11}")
        report("python -c pass", [python, "-c", "pass"], env, args.repeat, floor)
        report("typer app --help (one command)", [python, "-c", TYPER_FLOOR, "--help"], env, args.repeat, floor)
        for label, arguments in HELP_SCREENS:
            report(label, [*convener, *arguments], env, args.repeat, floor)
        for backend, url in each_backend(args):
            floor = median_timing([python, "-c", "pass"], env, args.repeat)
            print(f"\n=== start-up, {backend} store: median of {args.repeat} runs; floor python -c pass "
                  f"{floor.wall:.3f} s ===")
            with tempfile.TemporaryDirectory() as own_dir:
                store_env = {**env, "CONVENER_DATA_DIR": own_dir, "CONVENER_DATABASE_URL": url}
                for label, arguments in STORE_COMMANDS:
                    report(label, [*convener, *arguments], store_env, args.repeat, floor)


if __name__ == "__main__":
    main()
