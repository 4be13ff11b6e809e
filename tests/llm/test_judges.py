"""The evaluation judges: the offline judge's rules, its agreement with a hand-labelled set, and the model
judge against the scripted OpenAI-compatible server (real HTTP, real SDK)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from convener.api.errors import Code, FailedPrecondition, Unavailable
from convener.llm import OpenAICompatibleProvider
from convener.llm.judges import (
    CRITERION_LABELS,
    HALLUCINATION_LABELS,
    SIMILARITY_LABELS,
    USER_GOAL_LABELS,
    Judge,
    ModelJudge,
    OfflineJudge,
    Verdict,
    judge_from,
)
from convener.llm.offline_judge import read
from tests.llm.fake_openai import FakeOpenAI

LABELS = Path(__file__).resolve().parents[1] / "data" / "judge_labels.jsonl"

REFUND = (
    "I've issued a refund of $45.90 to your Visa card ending in 4821. "
    "It usually takes 5 to 7 business days to appear."
)
ORDER_CONTEXT = [
    "Where is my order AC-1001?",
    json.dumps(
        {
            "order_id": "AC-1001",
            "status": "shipped",
            "shipped_on": "2024-03-03",
            "estimated_delivery": "2024-03-07",
        }
    ),
]


@pytest.fixture
def offline() -> OfflineJudge:
    return OfflineJudge("off")


# -- offline: similarity ----------------------------------------------------------------------------


def test_identical_answers_are_fully_consistent(offline: OfflineJudge) -> None:
    verdict = offline.similarity(REFUND, REFUND)

    assert verdict == Verdict(4, SIMILARITY_LABELS[4], verdict.explanation)
    assert verdict.explanation.startswith("Offline judge:")


def test_case_and_punctuation_do_not_matter(offline: OfflineJudge) -> None:
    assert offline.similarity("Your order AC-1001 has shipped.", "your order ac-1001 has shipped!").score == 4


def test_a_faithful_paraphrase_keeping_every_figure_scores_high(offline: OfflineJudge) -> None:
    actual = "A $45.90 refund is on its way to the Visa ending 4821; expect it within 5-7 business days."

    assert offline.similarity(REFUND, actual).score >= 3


def test_a_wrong_amount_is_a_contradiction(offline: OfflineJudge) -> None:
    verdict = offline.similarity(REFUND, REFUND.replace("45.90", "54.90"))

    assert verdict.score <= 1
    assert "contradiction" in verdict.explanation and "45.90" in verdict.explanation


def test_a_wrong_date_or_identifier_is_a_contradiction(offline: OfflineJudge) -> None:
    expected = "Your order AC-1001 shipped on March 3 and should arrive by March 7."

    assert offline.similarity(expected, expected.replace("March 7", "March 9")).score <= 1
    assert offline.similarity(expected, expected.replace("AC-1001", "AC-1010")).score <= 1


def test_figures_are_compared_after_normalisation(offline: OfflineJudge) -> None:
    assert offline.similarity("The total is $1,200.00.", "The total is 1200 dollars.").score == 4
    assert offline.similarity("It opens at 2 pm.", "It opens at 14:00.").score == 4
    assert offline.similarity("It arrives on March 3.", "It arrives on 2024-03-03.").score >= 3
    assert offline.similarity("After five failed attempts.", "After 5 failed attempts.").score == 4


def test_reading_a_text_yields_normalised_figures() -> None:
    reading = read("Order AC-1001, €1.234,50 on 3 de março at 2:35 p.m.; departs 2024-06-12T10:05")

    values = {(figure.kind, figure.value) for figure in reading.figures}
    assert {("id", "ac1001"), ("number", "1234.5"), ("date", "3-3"), ("time", "14:35")} <= values
    assert {("date", "6-12"), ("number", "2024"), ("time", "10:05")} <= values


def test_a_negation_on_one_side_only_is_a_contradiction(offline: OfflineJudge) -> None:
    expected = "Order AC-1003 has been cancelled and you will not be charged."

    flipped = offline.similarity(expected, "Order AC-1003 has been cancelled and you will be charged a fee.")
    moved = offline.similarity(expected, "I cancelled order AC-1003 for you; no charge will be made.")

    assert flipped.score <= 1 and "negated" in flipped.explanation
    assert moved.score >= 3


def test_a_missing_figure_caps_the_score(offline: OfflineJudge) -> None:
    verdict = offline.similarity(
        REFUND, "I've issued a refund to your Visa card. It takes a few business days."
    )

    assert verdict.score <= 2
    assert "missing" in verdict.explanation


def test_hedging_and_extra_figures_are_not_fully_consistent(offline: OfflineJudge) -> None:
    expected = "Your gift card balance is $18.75."

    assert offline.similarity(expected, "I think your gift card balance is probably $18.75.").score == 3
    assert offline.similarity(expected, expected + " It expires in 12 months.").score == 3


def test_an_empty_or_unrelated_answer_scores_zero(offline: OfflineJudge) -> None:
    assert offline.similarity(REFUND, "").score == 0
    assert offline.similarity(REFUND, "   ").explanation == "Offline judge: by words: the response is empty."
    assert offline.similarity(REFUND, "Our stores open at 9 am on weekdays.").score == 0


# -- offline: hallucination -------------------------------------------------------------------------


def test_claims_backed_by_the_context_are_justified(offline: OfflineJudge) -> None:
    verdict = offline.hallucination(
        "Your order AC-1001 shipped on March 3 and should arrive by March 7. Anything else?", ORDER_CONTEXT
    )

    assert verdict == Verdict(1, HALLUCINATION_LABELS[1], verdict.explanation)
    assert verdict.explanation.startswith("Offline judge:")


def test_a_number_not_in_the_context_is_not_justified(offline: OfflineJudge) -> None:
    response = "Thanks for waiting! Your order AC-1001 shipped on March 3 and should arrive by March 5."

    verdict = offline.hallucination(response, ORDER_CONTEXT)

    assert verdict.score == 0
    assert verdict.label == HALLUCINATION_LABELS[0]
    assert '"Your order AC-1001 shipped on March 3 and should arrive by March 5."' in verdict.explanation
    assert "march 5" in verdict.explanation


def test_a_claim_with_mostly_new_words_is_not_justified(offline: OfflineJudge) -> None:
    response = "Your order AC-1001 shipped. We also added a complimentary gift voucher to your account."

    verdict = offline.hallucination(response, ORDER_CONTEXT)

    assert verdict.score == 0
    assert "complimentary gift voucher" in verdict.explanation


def test_courtesy_questions_and_requests_make_no_claim(offline: OfflineJudge) -> None:
    for response in (
        "How can I help?",
        "Anything else?",
        "I'm sorry to hear that! Let me look into it for you.",
        "Happy to help. Have a great day!",
        "Please try again and let me know if it works.",
        "",
    ):
        verdict = offline.hallucination(response, ORDER_CONTEXT)
        assert verdict.score == -1, response
        assert verdict.label == HALLUCINATION_LABELS[-1]


def test_claims_without_any_context_are_not_justified(offline: OfflineJudge) -> None:
    assert offline.hallucination("Your order will arrive on Friday.", []).score == 0


@pytest.mark.parametrize("response", ["It looks like AC-1234.", "The order number looks like AC-1234.",
                                      "Use a number such as AC-1234.", "For example: AC-1234."])
def test_a_figure_given_as_an_example_of_a_format_is_not_a_claim(offline: OfflineJudge, response: str) -> None:
    assert offline.hallucination(response, ["What is the order number?"]).score == -1


def test_an_example_does_not_excuse_another_figure_of_the_sentence(offline: OfflineJudge) -> None:
    verdict = offline.hallucination("Order AC-7777, for example AC-1234, shipped.", ORDER_CONTEXT)
    assert verdict.score == 0 and "ac-7777" in verdict.explanation
    assert offline.hallucination("Your AC-1234 shipped.", ["What is the order number?"]).score == 0


# -- offline: criterion -----------------------------------------------------------------------------


def test_a_quoted_phrase_must_appear(offline: OfflineJudge) -> None:
    prompt = 'The agent tells the customer the reference "ESC-20417".'

    met = offline.criterion(prompt, "user: any news?\nagent: Your reference is ESC-20417.")
    unmet = offline.criterion(prompt, "user: any news?\nagent: I've escalated it.")

    assert (met.score, met.label) == (1, CRITERION_LABELS[1])
    assert (unmet.score, unmet.label) == (0, CRITERION_LABELS[0])
    assert '"ESC-20417" does not appear' in unmet.explanation


def test_a_negated_criterion_is_inverted(offline: OfflineJudge) -> None:
    quoted = 'The agent never mentions "internal discount code".'
    plain = "The agent does not promise a refund."

    assert offline.criterion(quoted, "agent: Your order is on its way.").score == 1
    assert offline.criterion(quoted, "agent: Use our internal discount code STAFF10.").score == 0
    assert offline.criterion(plain, "agent: I've checked the order status for you.").score == 1
    assert offline.criterion(plain, "agent: Don't worry, I'll refund you, I promise.").score == 0


def test_without_quotes_the_key_words_must_appear(offline: OfflineJudge) -> None:
    prompt = "The agent asks the customer for the order number."

    assert offline.criterion(prompt, "agent: Could you give me your order number?").score == 1
    assert offline.criterion(prompt, "agent: Hello! How are you today?").score == 0


def test_every_offline_explanation_names_the_judge(offline: OfflineJudge) -> None:
    verdicts = [
        offline.similarity(REFUND, "Something else entirely."),
        offline.hallucination("Your order is lost.", ORDER_CONTEXT),
        offline.criterion("The agent mentions the refund.", "agent: hi"),
        offline.criterion("", ""),
    ]

    assert all(verdict.explanation.startswith("Offline judge: ") for verdict in verdicts)


def test_the_offline_judge_is_deterministic() -> None:
    first, second = OfflineJudge("off"), OfflineJudge("off")
    actual = "I believe about $45.90 went back to the Visa ending 4821, probably within a week."

    verdicts = {
        first.similarity(REFUND, actual),
        second.similarity(REFUND, actual),
        first.similarity(REFUND, actual),
    }

    assert len(verdicts) == 1


def test_judge_from_picks_the_offline_judge_without_a_provider() -> None:
    judge: Judge = judge_from(None)

    assert isinstance(judge, OfflineJudge) and judge.name == "offline"


# -- offline: agreement with the labelled set -------------------------------------------------------


def _labelled() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_labelled_set_is_well_formed() -> None:
    items = _labelled()

    similarity = [item for item in items if item["kind"] == "similarity"]
    hallucination = [item for item in items if item["kind"] == "hallucination"]
    assert len(items) >= 200 and len(similarity) >= 150 and len(hallucination) >= 50
    assert len(similarity) + len(hallucination) == len(items)
    for item in similarity:
        assert set(item) == {"kind", "expected", "actual", "score", "variant"}
        assert item["score"] in SIMILARITY_LABELS
    for item in hallucination:
        assert set(item) == {"kind", "response", "context", "score", "variant"}
        assert item["score"] in HALLUCINATION_LABELS and isinstance(item["context"], list)
    assert {item["score"] for item in similarity} == set(SIMILARITY_LABELS)
    assert {item["score"] for item in hallucination} == set(HALLUCINATION_LABELS)


def test_the_offline_judge_agrees_with_the_labels_often_enough(offline: OfflineJudge) -> None:
    # Measured (words only): similarity exact 49%, within ±1 76% (missing most other-language answers, which a
    # lexical judge cannot read); hallucination exact 72%. The floors leave a margin for rule changes.
    items = _labelled()
    similarity = [
        (item, offline.similarity(item["expected"], item["actual"]).score)
        for item in items
        if item["kind"] == "similarity"
    ]
    hallucination = [
        (item, offline.hallucination(item["response"], item["context"]).score)
        for item in items
        if item["kind"] == "hallucination"
    ]

    def share(pairs: list[tuple[dict[str, Any], int]], tolerance: int) -> float:
        return sum(abs(int(item["score"]) - score) <= tolerance for item, score in pairs) / len(pairs)

    same_language = [(item, score) for item, score in similarity if item["variant"] != "other-language"]
    assert share(similarity, 1) >= 0.65
    assert share(same_language, 1) >= 0.75
    assert share(similarity, 0) >= 0.36
    assert share(hallucination, 0) >= 0.62


# -- the model judge against the scripted server -------------------------------------------------------


@pytest.fixture
def provider(fake_openai: FakeOpenAI) -> Iterator[OpenAICompatibleProvider]:
    with OpenAICompatibleProvider(
        model="fake-model", base_url=fake_openai.base_url, timeout_seconds=5, max_retries=0
    ) as opened:
        yield opened


def _verdict(score: int, explanation: str = "because") -> str:
    return json.dumps({"score": score, "explanation": explanation})


def test_the_majority_of_the_samples_wins(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    for score in (3, 1, 3):
        fake_openai.reply(text=_verdict(score, f"looks like {score}"))

    verdict = ModelJudge(provider).similarity(REFUND, "A refund of $45.90 is on its way.")

    assert (verdict.score, verdict.label) == (3, SIMILARITY_LABELS[3])
    assert verdict.explanation.startswith("Model judge: looks like 3")
    assert "2 of 3 samples" in verdict.explanation
    assert len(fake_openai.requests) == 3
    assert all(body["temperature"] > 0 for body in fake_openai.requests)


def test_a_tie_goes_to_the_stricter_score(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    for score in (4, 2):
        fake_openai.reply(text=_verdict(score))
    for score in (1, 0):
        fake_openai.reply(text=_verdict(score))

    judge = ModelJudge(provider, samples=2)

    assert judge.similarity(REFUND, "something").score == 2
    assert judge.hallucination("Your order shipped.", ORDER_CONTEXT).score == 0


def test_an_unparseable_sample_is_ignored(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(text="I would say it is mostly consistent.")
    fake_openai.reply(text=_verdict(1, "the amount is missing"))
    fake_openai.reply(text=_verdict(7))  # out of range: discarded too

    verdict = ModelJudge(provider).similarity(REFUND, "Your refund is on its way.")

    assert verdict.score == 1
    assert verdict.explanation.startswith("Model judge: the amount is missing")
    assert "2 discarded" in verdict.explanation


def test_json_in_prose_or_a_code_fence_is_read(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(
        text='Here is my verdict:\n```json\n{"score": -1, "explanation": "only a greeting"}\n```'
    )
    fake_openai.reply(text='Verdict: {"score": "1", "explanation": "met"} - hope that helps')

    judge = ModelJudge(provider, samples=1)

    assert judge.hallucination("Hello!", ORDER_CONTEXT).score == -1
    assert judge.criterion("The agent greets the user.", "agent: Hello!").score == 1
    assert all(body["temperature"] == 0 for body in fake_openai.requests)


def test_no_usable_sample_is_unavailable(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="no idea")
    fake_openai.reply(text='{"score": 9, "explanation": "out of range"}')
    fake_openai.reply(text='{"explanation": "forgot the score"}')

    with pytest.raises(Unavailable) as raised:
        ModelJudge(provider).similarity(REFUND, "whatever")

    assert raised.value.code is Code.UNAVAILABLE
    assert "3 unusable replies out of 3 samples" in raised.value.message


def test_a_provider_failure_on_every_sample_is_raised_as_it_is(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(status=401, times=2, message="bad key")

    with pytest.raises(FailedPrecondition):
        ModelJudge(provider, samples=2).criterion("The agent greets the user.", "agent: hi")


def test_a_question_is_asked_once(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: _verdict(1)  # valid for both kinds asked
    judge = ModelJudge(provider)

    first = judge.similarity(REFUND, REFUND)
    second = judge.similarity(REFUND, REFUND)
    judge.hallucination(REFUND, [REFUND])

    assert first == second
    assert len(fake_openai.requests) == 6  # 3 for the similarity (once), 3 for the hallucination


def test_the_prompt_spells_out_the_label_definitions(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: _verdict(1)
    judge = ModelJudge(provider, samples=1)

    judge.similarity("expected words", "actual words")
    judge.hallucination("the response", ["tool said this", "user said that"])

    similarity, hallucination = (body["messages"][-1]["content"] for body in fake_openai.requests)
    assert all(f"{score} = {label}" in similarity for score, label in SIMILARITY_LABELS.items())
    assert "expected words" in similarity and "actual words" in similarity
    assert all(f"{score} = {label}" in hallucination for score, label in HALLUCINATION_LABELS.items())
    assert "[1] tool said this" in hallucination and "[2] user said that" in hallucination
    assert '"score"' in fake_openai.requests[0]["messages"][0]["content"]
    assert fake_openai.requests[0]["response_format"]["type"] == "json_schema"


def test_samples_run_concurrently_within_the_bound(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: _verdict(2)
    for _ in range(6):
        fake_openai.delay(0.3)

    started = time.monotonic()
    ModelJudge(provider, samples=3, max_concurrency=3).similarity("a", "b")
    parallel = time.monotonic() - started
    started = time.monotonic()
    ModelJudge(provider, samples=3, max_concurrency=1).similarity("a", "b")
    serial = time.monotonic() - started

    assert serial >= 0.9
    assert parallel < serial - 0.3


def test_judge_from_picks_the_model_judge_with_a_provider(provider: OpenAICompatibleProvider) -> None:
    judge: Judge = judge_from(provider)

    assert isinstance(judge, ModelJudge) and judge.name == "model"


# -- user goal ----------------------------------------------------------------------------------------

REFUND_TASK = "The user wants a refund for order AC-1003."
REFUNDED = (
    "user: Hi, I'd like a refund for order AC-1003 please.\n"
    "agent: Let me look into that for you.\n"
    'agent called tool process_refund({"order_id": "AC-1003"})'
    ' -> {"refund_id": "RF-88", "status": "issued"}\n'
    "agent: Done! The refund for order AC-1003 has been issued to your card.\n"
    "user: Great, thanks.\n"
    "agent: You're welcome! Is there anything else I can help you with today?"
)


def test_a_task_done_by_a_successful_tool_call_is_completed(offline: OfflineJudge) -> None:
    verdict = offline.user_goal(REFUND_TASK, REFUNDED)

    assert (verdict.score, verdict.label) == (1, USER_GOAL_LABELS[1])
    assert "process_refund" in verdict.explanation


def test_a_task_done_as_the_agent_states_it_is_completed(offline: OfflineJudge) -> None:
    transcript = (
        "user: Where is my order AC-1001?\n"
        "agent: Your order AC-1001 shipped on March 3 and should arrive by March 7.\n"
        "agent: Goodbye!"
    )

    assert offline.user_goal("Find out where order AC-1001 is.", transcript).score == 1


def test_a_refusal_is_not_completed(offline: OfflineJudge) -> None:
    transcript = (
        "user: I want a refund for order AC-1003.\n"
        "agent: I'm sorry, order AC-1003 can't be refunded: it was bought more than 30 days ago.\n"
        "user: Oh well.\n"
        "agent: Have a lovely day!"
    )

    verdict = offline.user_goal(REFUND_TASK, transcript)

    assert (verdict.score, verdict.label) == (0, USER_GOAL_LABELS[0])
    assert "refused" in verdict.explanation and "can't be refunded" in verdict.explanation


def test_a_failed_tool_call_is_not_completed(offline: OfflineJudge) -> None:
    transcript = (
        "user: Refund AC-1003 please.\n"
        'agent called tool process_refund({"order_id": "AC-1003"}) -> {"error": "payment gateway down"}\n'
        "agent: Hmm, something went wrong on our side."
    )

    assert offline.user_goal(REFUND_TASK, transcript).score == 0


def test_a_handoff_to_a_human_is_graceful(offline: OfflineJudge) -> None:
    transferred = "user: I want a refund for AC-1003.\nagent transferred to Human Agent"
    said = "user: I want a refund.\nagent: I'm connecting you with a human representative now."
    offered = "user: I want a refund.\nagent: Would you like me to transfer you to a person?"
    to_another_bot = 'user: Refund AC-1003.\nagent transferred to Billing Agent'

    for transcript in (transferred, said):
        verdict = offline.user_goal(REFUND_TASK, transcript)
        assert (verdict.score, verdict.label) == (2, USER_GOAL_LABELS[2]), transcript
        assert "handoff" in verdict.explanation
    assert offline.user_goal(REFUND_TASK, offered).score == 0
    assert offline.user_goal(REFUND_TASK, to_another_bot).score == 0


def test_a_session_ended_escalated_is_a_handoff_and_a_plain_end_is_not(offline: OfflineJudge) -> None:
    escalated = ("user: I want a refund for AC-1003.\nagent: One moment.\n"
                 "agent ended the session, escalating to a human agent: refund over the limit")
    verdict = offline.user_goal(REFUND_TASK, escalated)
    assert (verdict.score, verdict.label) == (2, USER_GOAL_LABELS[2])
    assert 'escalating to a human agent ("refund over the limit")' in verdict.explanation
    plain = "user: I want a refund for AC-1003.\nagent: One moment.\nagent ended the session: resolved"
    assert offline.user_goal(REFUND_TASK, plain).score == 0
    ended_text = offline.user_goal(REFUND_TASK, plain).explanation
    assert "resolved" not in ended_text, "the end line is not read as something the agent said"


def test_an_empty_task_is_unspecified(offline: OfflineJudge) -> None:
    for task in ("", "   \n"):
        verdict = offline.user_goal(task, REFUNDED)
        assert (verdict.score, verdict.label) == (-1, USER_GOAL_LABELS[-1])


def test_an_agent_that_only_asked_questions_shows_no_sign_of_completion(offline: OfflineJudge) -> None:
    transcript = (
        "user: I want a refund for order AC-1003.\n"
        "agent: Sure, can you tell me why you want to return it?\n"
        "user: It arrived broken.\n"
        "agent: Could you send me a photo of the damage?"
    )

    verdict = offline.user_goal(REFUND_TASK, transcript)

    assert verdict.score == 0
    assert "no sign the task was completed" in verdict.explanation


def test_every_user_goal_explanation_names_the_judge_and_the_rule(offline: OfflineJudge) -> None:
    verdicts = [
        offline.user_goal("", ""),
        offline.user_goal(REFUND_TASK, ""),
        offline.user_goal(REFUND_TASK, REFUNDED),
        offline.user_goal(REFUND_TASK, "agent: I'm unable to refund AC-1003."),
        offline.user_goal(REFUND_TASK, "agent transferred to Live Agent"),
    ]

    assert all(verdict.explanation.startswith("Offline judge: ") for verdict in verdicts)
    rules = ("task is empty", "no sign", "completed", "refused", "handoff")
    assert all(rule in verdict.explanation for rule, verdict in zip(rules, verdicts, strict=True))


def test_the_offline_judge_is_its_own_variant(offline: OfflineJudge) -> None:
    assert offline.with_samples(1) is offline
    assert offline.with_samples(5) is offline


def test_the_model_judge_reads_a_user_goal_verdict(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: _verdict(2, "the agent transferred the user to a person")

    verdict = ModelJudge(provider).user_goal(REFUND_TASK, "agent transferred to Human Agent")

    assert (verdict.score, verdict.label) == (2, USER_GOAL_LABELS[2])
    assert verdict.explanation.startswith("Model judge: the agent transferred the user to a person")
    prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert all(f"{score} = {label}" in prompt for score, label in USER_GOAL_LABELS.items())
    assert REFUND_TASK in prompt and "agent transferred to Human Agent" in prompt
    assert "TASK" in prompt and "CONVERSATION" in prompt


def test_a_model_judge_with_one_sample_asks_once_at_temperature_zero(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: _verdict(1)
    judge = ModelJudge(provider, samples=3)

    quick = judge.with_samples(1)
    quick.user_goal(REFUND_TASK, REFUNDED)
    quick.criterion("The agent issues the refund.", REFUNDED)

    assert quick.samples == 1 and judge.samples == 3
    assert len(fake_openai.requests) == 2  # one request per question
    assert all(body["temperature"] == 0 for body in fake_openai.requests)
    quick.user_goal(REFUND_TASK, REFUNDED)
    assert len(fake_openai.requests) == 2  # cached
    judge.user_goal(REFUND_TASK, REFUNDED)
    assert len(fake_openai.requests) == 5  # the parent keeps its own samples (and cache)
    assert all(body["temperature"] > 0 for body in fake_openai.requests[2:])


def test_a_model_judge_variant_is_made_once(provider: OpenAICompatibleProvider) -> None:
    judge = ModelJudge(provider, samples=3)

    quick = judge.with_samples(1)

    assert judge.with_samples(1) is quick
    assert judge.with_samples(3) is judge and quick.with_samples(3) is judge
    assert quick.with_samples(1) is quick
    assert quick.provider is judge.provider and quick.max_concurrency == judge.max_concurrency
    with pytest.raises(ValueError):
        judge.with_samples(0)


def test_a_model_judge_variant_shares_the_bound_on_requests_in_flight(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: _verdict(1)
    for _ in range(3):
        fake_openai.delay(0.25)
    judge = ModelJudge(provider, samples=1, max_concurrency=1)
    double = judge.with_samples(2)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        asked = [
            pool.submit(judge.criterion, "The agent greets the user.", "agent: hi"),
            pool.submit(double.criterion, "The agent greets the user.", "agent: hi"),
        ]
        verdicts = [future.result() for future in asked]
    elapsed = time.monotonic() - started

    assert [verdict.score for verdict in verdicts] == [1, 1]
    assert len(fake_openai.requests) == 3
    assert elapsed >= 0.7  # three requests one at a time, not the variant's two beside the parent's one
