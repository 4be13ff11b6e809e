"""ADK's side of benchmarks/adk_compare.py, run with the ADK venv's python (google-adk[eval] conflicts with
Convener's openai>=3, so it lives in a venv of its own: ``make .venv-adk``)::

    .venv-adk/bin/python benchmarks/adk/run_adk.py EVALSET [--warmup N]

Evaluates the evalset with ``AgentEvaluator.evaluate_eval_set`` on the scripted agent (``scripted_agent``),
tool trajectory and ROUGE response match (the metrics that need no model), one run per case. With
``--warmup N`` it first evaluates the first N cases untimed (imports, metric set-up, first-call caches),
then times the whole set. Prints one JSON line: evaluations, seconds, cpu_seconds. Every case must pass
(a failing case would make the figures say nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from google.adk.evaluation.agent_evaluator import AgentEvaluator  # noqa: E402
from google.adk.evaluation.eval_config import EvalConfig  # noqa: E402
from google.adk.evaluation.eval_set import EvalSet  # noqa: E402

import scripted_agent  # noqa: E402

CONFIG = EvalConfig(criteria={"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})


def script(eval_set: EvalSet) -> None:
    """Teach the scripted agent each case's tool response and reply (keyed by order number)."""
    for case in eval_set.eval_cases:
        for invocation in case.conversation or []:
            data = invocation.intermediate_data
            for response in getattr(data, "tool_responses", None) or []:
                order = (response.response or {}).get("orderId")
                if order:
                    scripted_agent.ORDERS[order] = dict(response.response or {})
                    final = invocation.final_response
                    scripted_agent.SCRIPT[order] = "\n".join(p.text or "" for p in (final.parts or [])) if final else ""


def evaluate(eval_set: EvalSet) -> None:
    asyncio.run(AgentEvaluator.evaluate_eval_set("scripted_agent", eval_set, eval_config=CONFIG, num_runs=1,
                                                 print_detailed_results=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("evalset", type=Path)
    parser.add_argument("--warmup", type=int, default=0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    eval_set = EvalSet.model_validate_json(args.evalset.read_text("utf-8"))
    script(eval_set)
    if args.warmup:
        evaluate(eval_set.model_copy(update={"eval_cases": eval_set.eval_cases[:args.warmup]}))
    started, cpu = time.perf_counter(), time.process_time()
    evaluate(eval_set)
    print(json.dumps({"evaluations": len(eval_set.eval_cases), "seconds": time.perf_counter() - started,
                      "cpu_seconds": time.process_time() - cpu}))


if __name__ == "__main__":
    main()
