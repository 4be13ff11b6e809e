"""ADK's side of benchmarks/adk_compare.py and adk_parity.py, run with the ADK venv's python (google-adk[eval]
conflicts with Convener's openai>=3, so it lives in a venv of its own: ``make .venv-adk``)::

    .venv-adk/bin/python benchmarks/adk/run_adk.py EVALSET [--warmup N]
    .venv-adk/bin/python benchmarks/adk/run_adk.py EVALSET --per-case --agent AGENT.json [--config test_config.json]

Evaluates the evalset with ``AgentEvaluator.evaluate_eval_set`` on the scripted agent (``scripted_agent``),
tool trajectory and ROUGE response match (the metrics that need no model), one run per case. With
``--warmup N`` it first evaluates the first N cases untimed (imports, metric set-up, first-call caches),
then times the whole set. Prints one JSON line: evaluations, seconds, cpu_seconds. Every case must pass
(a failing case would make the figures say nothing).

With ``--per-case`` it prints instead one JSON line per eval case: ``{"eval_id", "passed", "scores"}``, the
verdict ``AgentEvaluator.evaluate_eval_set`` reaches for the case (its own steps: the eval results by eval
ID, then the failures ``_process_metrics_and_get_failures`` and ``_get_failures_from_final_eval_status``
find; the public method only raises one AssertionError for the whole set), and each metric's overall score.
The criteria are ``--config`` read as AgentEvaluator reads a test_config.json (ADK's defaults when the file
does not exist). ``--agent`` scripts the agent: ``{"replies": {order: text}, "orders": {order: response}}``,
so that it says what the Convener agent says, whatever the eval case expects.
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
from google.adk.evaluation.eval_config import EvalConfig, get_evaluation_criteria_or_default  # noqa: E402
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


def per_case(eval_set: EvalSet, config: EvalConfig) -> list[dict[str, object]]:
    """AgentEvaluator.evaluate_eval_set's verdict on each eval case (see the module's docstring)."""
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config
    from google.adk.evaluation.metric_evaluator_registry import (DEFAULT_METRIC_EVALUATOR_REGISTRY,
                                                                 register_custom_metrics_from_config)
    from google.adk.evaluation.simulation.user_simulator_provider import UserSimulatorProvider

    async def run() -> list[dict[str, object]]:
        agent, app = await AgentEvaluator._get_agent_for_eval(module_name="scripted_agent")
        by_id = await AgentEvaluator._get_eval_results_by_eval_id(
            agent_for_eval=agent, eval_set=eval_set, eval_metrics=get_eval_metrics_from_config(config), num_runs=1,
            user_simulator_provider=UserSimulatorProvider(user_simulator_config=config.user_simulator_config),
            app_name="parity", app=app,
            metric_evaluator_registry=register_custom_metrics_from_config(config,
                                                                          DEFAULT_METRIC_EVALUATOR_REGISTRY.fork()))
        found = []
        for case in eval_set.eval_cases:
            results = by_id.get(case.eval_id, [])
            failures = AgentEvaluator._process_metrics_and_get_failures(
                eval_metric_results=AgentEvaluator._get_eval_metric_results_with_invocation(results),
                print_detailed_results=False, agent_module="scripted_agent")
            failures += AgentEvaluator._get_failures_from_final_eval_status(
                eval_id=case.eval_id, eval_results_per_eval_id=results, agent_module="scripted_agent")
            scores = {metric.metric_name: metric.score for result in results
                      for metric in result.overall_eval_metric_results if metric.score is not None
                      and metric.metric_name in (config.criteria or {})}
            found.append({"eval_id": case.eval_id, "passed": bool(results) and not failures, "scores": scores})
        return found

    return asyncio.run(run())


def evaluate(eval_set: EvalSet) -> None:
    asyncio.run(AgentEvaluator.evaluate_eval_set("scripted_agent", eval_set, eval_config=CONFIG, num_runs=1,
                                                 print_detailed_results=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("evalset", type=Path)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--per-case", action="store_true", help="Print each eval case's verdict (see above).")
    parser.add_argument("--config", type=Path, help="The test_config.json to read (ADK's defaults if absent).")
    parser.add_argument("--agent", type=Path, help="The agent's script: {replies: {order: text}, orders: {…}}.")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    eval_set = EvalSet.model_validate_json(args.evalset.read_text("utf-8"))
    if args.per_case:
        agent = json.loads(args.agent.read_text("utf-8"))
        scripted_agent.SCRIPT.update(agent["replies"])
        scripted_agent.ORDERS.update(agent["orders"])
        config = get_evaluation_criteria_or_default(str(args.config) if args.config else None)
        for verdict in per_case(eval_set, config):
            print(json.dumps(verdict))
        return
    script(eval_set)
    if args.warmup:
        evaluate(eval_set.model_copy(update={"eval_cases": eval_set.eval_cases[:args.warmup]}))
    started, cpu = time.perf_counter(), time.process_time()
    evaluate(eval_set)
    print(json.dumps({"evaluations": len(eval_set.eval_cases), "seconds": time.perf_counter() - started,
                      "cpu_seconds": time.process_time() - cpu}))


if __name__ == "__main__":
    main()
