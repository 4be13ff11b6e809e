"""ADK parity: the same ADK evalsets, scored by Google ADK's AgentEvaluator and by Convener, case by case.

Run from the repository root (``make .venv-adk`` first; without it the ADK side is skipped, saying so)::

    .venv/bin/python benchmarks/adk_parity.py [--cases 56] [--backend sqlite]

The agent is the same on both sides: the Convener demo app, and on ADK's side the scripted agent
(``benchmarks/adk/scripted_agent.py``) told to say what the demo agent says and to return what the demo's
``lookup_order`` returns. Each case asks about orders in one or two invocations; what the case *expects*
varies, so that some cases pass and some fail on the trajectory and on the response:

- tool calls: as the agent makes them (a transfer to the orders agent, then ``lookup_order``), or another
  tool, other arguments, an extra argument, no transfer, an extra call, the calls reordered, none;
- the final response: the agent's words, or with words dropped or replaced (varying ROUGE-1 overlap), in
  capitals, reworded, or none.

Three sets of criteria, each a test_config.json beside the evalset (ADK's and Convener's import find it
there): none (ADK's defaults, trajectory EXACT 1.0 and response_match_score 0.8), trajectory IN_ORDER 1.0 with
response_match_score 0.6, and trajectory ANY_ORDER ignoring arguments 0.5 with response_match_score 0.9.

ADK's verdict per case is the one ``AgentEvaluator.evaluate_eval_set`` reaches (``run_adk.py --per-case``).
Convener imports the evalset twice: with its criteria (``import_adk``) and, for the figure before criteria
were read, as the import made evaluations before (``adk.evaluations_from_adk``, Convener's own checks: the
judge's semantic similarity, parameter correctness and tool invocation), then plays them all as one
golden run. The report: per criteria set, the cases on which the two agree, before and after; then every
case on which they disagree after, with both sides' figures. Target: agreement on every case.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adk_compare import ORDERS, demo_replies, question
from backends import add_arguments, each_backend

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation import adk
from convener.ces.evaluation.adk_criteria import CONFIG_FILE, parse_criteria
from convener.ces.evaluation.requests import RunEvaluationRequest
from convener.config import Settings
from convener.demo import tools as demo_tools
from convener.demo.loader import APP, install_app
from convener.services import Services

ROOT = Path(__file__).resolve().parent.parent
ADK_PYTHON = ROOT / ".venv-adk" / "bin" / "python"
RUN_ADK = ROOT / "benchmarks" / "adk" / "run_adk.py"

CRITERIA: dict[str, dict[str, Any] | None] = {
    "default": None,
    "in-order": {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
                              "response_match_score": 0.6}},
    "any-order": {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER",
                                                             "ignore_args": True},
                               "response_match_score": 0.9}},
}
CALLS = ["same", "same", "same", "other_tool", "other_args", "extra_arg", "no_transfer", "extra_call", "reordered",
         "none"]
RESPONSES = ["same", "same", "drop1", "drop3", "drop6", "replace2", "replace5", "capitals", "reworded", "none"]


def transfer() -> dict[str, Any]:
    return {"name": "transfer_to_agent", "args": {"agent_name": "orders"}}


def lookup(order: str, **extra: Any) -> dict[str, Any]:
    return {"name": "lookup_order", "args": {"order_id": order, **extra}}


def expected_calls(kind: str, order: str, first: bool) -> list[dict[str, Any]]:
    """What the case expects; the agent transfers on a session's first invocation only, as the demo does."""
    lead = [transfer()] if first else []
    other = ORDERS[(ORDERS.index(order) + 5) % len(ORDERS)]
    return {
        "same": [*lead, lookup(order)],
        "other_tool": [*lead, {"name": "check_refund_eligibility", "args": {"order_id": order}}],
        "other_args": [*lead, lookup(other)],
        "extra_arg": [*lead, lookup(order, verbose=True)],
        "no_transfer": [lookup(order)],
        "extra_call": [*lead, lookup(order), lookup(order)],
        "reordered": [lookup(order), transfer()],
        "none": [],
    }[kind]


def expected_reply(kind: str, reply: str) -> str | None:
    words = reply.split()
    if kind == "drop1":
        return " ".join(words[:-1])
    if kind in ("drop3", "drop6"):
        count = int(kind[-1])
        step = max(len(words) // count, 1)
        dropped = set(range(0, len(words), step)[:count])
        return " ".join(word for index, word in enumerate(words) if index not in dropped)
    if kind in ("replace2", "replace5"):
        count = int(kind[-1])
        return " ".join("something" if index % max(len(words) // count, 1) == 1 and index // max(
            len(words) // count, 1) < count else word for index, word in enumerate(words))
    if kind == "capitals":
        return reply.upper() + "!"
    if kind == "reworded":
        return f"Here is what I found about your order: {' '.join(words[:3])} - please check back later."
    if kind == "none":
        return None
    return reply


def evalset(prefix: str, count: int, replies: dict[str, str]) -> dict[str, Any]:
    cases = []
    for index in range(count):
        conversation = []
        for turn in range(2 if index % 4 == 3 else 1):
            order = ORDERS[(index + turn) % len(ORDERS)]
            calls = expected_calls(CALLS[(index + 3 * turn) % len(CALLS)], order, turn == 0)
            reply = expected_reply(RESPONSES[(index // len(CALLS) + index + turn) % len(RESPONSES)], replies[order])
            invocation: dict[str, Any] = {
                "invocation_id": f"{prefix}-{index}-{turn}",
                "user_content": {"role": "user", "parts": [{"text": question(order)}]},
                "intermediate_data": {
                    "tool_uses": calls,
                    # What lookup_order returned for the order asked about, whatever the case expects: the replay
                    # hands it to the agent, so both agents answer from the same data.
                    "tool_responses": [{"name": "lookup_order", "response": demo_tools.lookup_order(order)}],
                    "intermediate_responses": [],
                },
            }
            if reply is not None:
                invocation["final_response"] = {"role": "model", "parts": [{"text": reply}]}
            conversation.append(invocation)
        cases.append({"eval_id": f"{prefix}-{index:03d}", "conversation": conversation,
                      "session_input": {"app_name": "orders", "user_id": "parity", "state": {}}})
    return {"eval_set_id": f"parity-{prefix}", "name": prefix, "eval_cases": cases}


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str


def adk_verdicts(python: Path, path: Path, agent: Path) -> dict[str, Verdict]:
    command = [str(python), str(RUN_ADK), str(path), "--per-case", "--agent", str(agent), "--config",
               str(path.parent / CONFIG_FILE)]
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(f"run_adk.py --per-case failed ({finished.returncode}):\n{finished.stderr[-3000:]}")
    verdicts = {}
    for line in finished.stdout.splitlines():
        if line.startswith("{"):
            found = json.loads(line)
            scores = ", ".join(f"{name} {score:.4f}" for name, score in sorted(found["scores"].items()))
            verdicts[found["eval_id"]] = Verdict(found["passed"], scores)
    return verdicts


def convener_verdicts(services: Services, names: dict[str, str]) -> dict[str, Verdict]:
    """Play the evaluations (eval_id -> evaluation name) as one run; each one's verdict and why."""
    evaluations = services.runtime.evaluations
    operation = evaluations.run(RunEvaluationRequest(app=str(APP), evaluations=list(names.values()), run_count=1),
                                LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "900s", LOCAL_USER)
    assert done.done, done
    verdicts = {}
    for eval_id, name in names.items():
        result = evaluations.get_evaluation(name, False, LOCAL_USER).last_completed_result
        status = result.evaluation_status.value if result is not None and result.evaluation_status else "NONE"
        golden = result.golden_result if result is not None else None
        detail = "; ".join(r.explanation or "" for r in (golden.evaluation_expectation_results or [])) \
            if golden is not None else ""
        verdicts[eval_id] = Verdict(status == "PASS", detail or status)
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=56, help="Eval cases per set of criteria.")
    parser.add_argument("--adk-python", type=Path, default=ADK_PYTHON,
                        help="The python of the venv google-adk[eval] is installed in (make .venv-adk).")
    add_arguments(parser)
    parser.set_defaults(backend="sqlite")
    args = parser.parse_args()
    have_adk = args.adk_python.exists()
    print(f"ADK parity: {args.cases} eval cases per set of criteria, {len(CRITERIA)} sets")
    if not have_adk:
        print(f"ADK side skipped: {args.adk_python} does not exist (`make .venv-adk/.installed` installs "
              "google-adk[eval] in .venv-adk)")
    with tempfile.TemporaryDirectory() as scratch:
        adk_side: dict[str, dict[str, Verdict]] = {}
        for backend, url in each_backend(args):
            services = Services.open(Settings(data_dir=Path(scratch) / backend, database_url=url))
            try:
                install_app(services)
                replies = demo_replies(services)
                agent = Path(scratch) / "agent.json"
                agent.write_text(json.dumps({"replies": replies, "orders": {
                    order: demo_tools.lookup_order(order) for order in ORDERS}}), "utf-8")
                after: dict[str, str] = {}
                before: dict[str, str] = {}
                sets: dict[str, list[str]] = {}
                for prefix, config in CRITERIA.items():
                    folder = Path(scratch) / prefix
                    folder.mkdir(exist_ok=True)
                    path = folder / f"{prefix}.evalset.json"
                    content = json.dumps(evalset(prefix, args.cases, replies))
                    path.write_text(content, "utf-8")
                    criteria = None
                    if config is not None:
                        (folder / CONFIG_FILE).write_text(json.dumps(config), "utf-8")
                        criteria = parse_criteria((folder / CONFIG_FILE).read_text("utf-8"), CONFIG_FILE)
                    done = services.runtime.evaluations.import_adk(str(APP), content, path.name, LOCAL_USER, criteria)
                    ids = [evaluation.display_name or "" for evaluation in done.evaluations]
                    sets[prefix] = ids
                    after.update({e.display_name or "": e.name or "" for e in done.evaluations})
                    for item in adk.evaluations_from_adk(content, APP, source=path.name):
                        old = item.evaluation.model_copy(update={"display_name": f"before {item.evaluation_id}"})
                        created = services.runtime.evaluations.create_evaluation(
                            str(APP), f"before-{item.evaluation_id}", old, LOCAL_USER)
                        before[item.evaluation_id] = created.name or ""
                    if have_adk and prefix not in adk_side:
                        adk_side[prefix] = adk_verdicts(args.adk_python, path, agent)
                ours_after = convener_verdicts(services, after)
                ours_before = convener_verdicts(services, before)
            finally:
                services.close()
            report(backend, sets, adk_side, ours_before, ours_after)


def report(backend: str, sets: dict[str, list[str]], adk_side: dict[str, dict[str, Verdict]],
           before: dict[str, Verdict], after: dict[str, Verdict]) -> None:
    print(f"\n{backend}: agreement with ADK's AgentEvaluator, case by case (pass/fail)")
    print("| criteria | cases | ADK passed | Convener passed, before | agreement before | "
          "Convener passed, with criteria | agreement with criteria |")
    print("|---|---|---|---|---|---|---|")
    disagreements = []
    totals = [0, 0, 0]
    for prefix, ids in sets.items():
        theirs = adk_side.get(prefix)
        passed_before = sum(before[i].passed for i in ids)
        passed_after = sum(after[i].passed for i in ids)
        if theirs is None:
            print(f"| {prefix} | {len(ids)} | skipped | {passed_before} | skipped | {passed_after} | skipped |")
            continue
        agree_before = sum(before[i].passed == theirs[i].passed for i in ids)
        agree_after = sum(after[i].passed == theirs[i].passed for i in ids)
        totals = [totals[0] + len(ids), totals[1] + agree_before, totals[2] + agree_after]
        print(f"| {prefix} | {len(ids)} | {sum(theirs[i].passed for i in ids)} | {passed_before} | "
              f"{agree_before}/{len(ids)} | {passed_after} | {agree_after}/{len(ids)} |")
        disagreements += [(i, theirs[i], after[i]) for i in ids if after[i].passed != theirs[i].passed]
    if totals[0]:
        print(f"| all | {totals[0]} | | | {totals[1]}/{totals[0]} ({totals[1] / totals[0]:.0%}) | | "
              f"{totals[2]}/{totals[0]} ({totals[2] / totals[0]:.0%}) |")
    for eval_id, theirs, ours in disagreements:
        print(f"disagreement {eval_id}: ADK {'PASS' if theirs.passed else 'FAIL'} ({theirs.detail}); "
              f"Convener {'PASS' if ours.passed else 'FAIL'} ({ours.detail})")


if __name__ == "__main__":
    sys.exit(main())
