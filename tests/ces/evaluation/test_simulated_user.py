"""The simulated user of scenario evaluations: the offline rules one by one, hostile inputs, and the model
user driven through the real OpenAI-compatible provider against the scripted fake over HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convener.api.errors import ApiError, FailedPrecondition
from convener.ces.evaluation.models import EvaluationPersona, Milestone, UserFact
from convener.ces.evaluation.simulated_user import (
    APOLOGY,
    MAX_TEXT,
    OFFLINE_LIMITS,
    Exchange,
    ModelUser,
    OfflineUser,
    Say,
    SimulatedUser,
    SimulationFailure,
    Stop,
    UserView,
    first_person,
    simulated_user,
)
from convener.config import Settings
from convener.llm import close_provider
from convener.llm.base import ModelProvider
from convener.llm.providers import provider_from_settings
from tests.llm.fake_openai import FakeOpenAI, Reply

TASK = "You want a refund for your order AC-1001, which arrived broken"
FACTS = (UserFact(name="order_number", value="AC-1001"), UserFact(name="email", value="a@b.c"))


def view(
    *lines: tuple[str, str],
    task: str = TASK,
    facts: Sequence[UserFact] = FACTS,
    persona: EvaluationPersona | None = None,
    milestone: Milestone | None = None,
    started: bool = False,
    milestones_done: bool = False,
) -> UserView:
    history = tuple(Exchange(role, text) for role, text in lines)  # type: ignore[arg-type]
    turn = sum(1 for exchange in history if exchange.role == "user")
    return UserView(task=task, facts=tuple(facts), persona=persona, milestone=milestone,
                    milestone_started=started, history=history, turn=turn, milestones_done=milestones_done)


def user(text: str) -> tuple[str, str]:
    return ("user", text)


def agent(text: str) -> tuple[str, str]:
    return ("agent", text)


OPENED = user("I want a refund for my order AC-1001, which arrived broken")


def offline(v: UserView) -> Say | Stop:
    return OfflineUser().next(v)


# -- choosing a simulator ---------------------------------------------------------------------------


def test_the_simulator_follows_the_provider() -> None:
    chosen = simulated_user(None)
    assert isinstance(chosen, OfflineUser) and isinstance(chosen, SimulatedUser)
    assert chosen.name == "offline" and chosen.limits == OFFLINE_LIMITS
    for words in ("static utterances", "events", "userFacts", "does not improvise", "persona"):
        assert words.casefold() in OFFLINE_LIMITS.casefold()


# -- rule 1: the opening ----------------------------------------------------------------------------


def test_the_user_opens_with_the_task_in_the_first_person() -> None:
    assert offline(view()) == Say("I want a refund for my order AC-1001, which arrived broken")


def test_the_user_opens_with_the_task_after_the_agents_greeting() -> None:
    said = offline(view(agent("Hello! How can I help you today?")))
    assert said == Say("I want a refund for my order AC-1001, which arrived broken")


def test_second_person_words_are_rewritten_keeping_capitals() -> None:
    assert first_person("You're upset. Your parcel is late; you've waited and you'll complain yourself.") == (
        "I'm upset. My parcel is late; I've waited and I'll complain myself."
    )
    assert first_person("You are sure the laptop is yours.") == "I am sure the laptop is mine."
    assert first_person("The shop charged you twice and owes you a refund, you said.") == (
        "The shop charged me twice and owes me a refund, I said."
    )
    assert first_person("It was sent to you.") == "It was sent to me."
    assert first_person("No second person here.") == "No second person here."


def test_a_task_saying_nothing_falls_back_to_the_milestone_or_a_request_for_help() -> None:
    assert offline(view(task="?!... ;; --")) == Say("Hello, I need some help.")
    goal = Milestone(goal="You ask about your delivery")
    assert offline(view(task="", milestone=goal, started=True)) == Say("I ask about my delivery")


# -- rule 2: a new milestone -----------------------------------------------------------------------


def test_a_started_milestone_is_pursued_with_its_goal() -> None:
    milestone = Milestone(goal="You ask for a replacement instead of the refund", success_criteria="x")
    said = offline(view(OPENED, agent("I am sorry to hear that. Can I help with anything?"),
                        milestone=milestone, started=True))
    assert said == Say("I ask for a replacement instead of the refund")


def test_a_milestone_already_under_way_does_not_repeat_its_goal() -> None:
    milestone = Milestone(goal="You ask for a replacement")
    said = offline(view(OPENED, agent("What's your order number?"), milestone=milestone, started=False))
    assert said == Say("AC-1001")


# -- rule 3: answering questions from the facts ----------------------------------------------------


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What's your order number?", "AC-1001"),
        ("Which email should the receipt go to?", "a@b.c"),
        ("Sure, I can help. Could you please provide your order number", "AC-1001"),
        ("Thanks. Please tell me the e-mail address on the account.", "a@b.c"),
        ("Got it. What is your email? I will send the label there.", "a@b.c"),
    ],
)
def test_questions_are_answered_with_the_best_matching_fact(question: str, answer: str) -> None:
    assert offline(view(OPENED, agent(question))) == Say(answer)


def test_a_fact_name_in_camel_case_or_with_dashes_matches() -> None:
    facts = (UserFact(name="phoneNumber", value="555-0100"), UserFact(name="post-code", value="SW1A 1AA"))
    said = offline(view(OPENED, agent("What phone number can we reach you on?"), facts=facts))
    assert said == Say("555-0100")
    assert offline(view(OPENED, agent("And your post code?"), facts=facts)) == Say("SW1A 1AA")


def test_a_fact_fully_named_by_the_question_wins_over_a_partial_one() -> None:
    facts = (UserFact(name="order_number", value="AC-1001"), UserFact(name="name", value="Ada Lovelace"))
    assert offline(view(OPENED, agent("What is the name on the order?"), facts=facts)) == Say("Ada Lovelace")


def test_a_tie_goes_to_the_first_fact() -> None:
    facts = (UserFact(name="shipping_address", value="1 Main St"),
             UserFact(name="billing_address", value="2 Side St"))
    assert offline(view(OPENED, agent("What is your address?"), facts=facts)) == Say("1 Main St")


def test_without_a_fact_an_identifier_of_the_task_is_given() -> None:
    assert offline(view(OPENED, agent("What's the order number?"), facts=())) == Say("AC-1001")


def test_an_unknown_answer_is_an_apology_and_a_second_ask_ends_the_conversation() -> None:
    question = "What is your date of birth?"
    assert offline(view(OPENED, agent(question))) == Say(APOLOGY)
    stopped = offline(view(OPENED, agent(question), user(APOLOGY), agent("I need it. " + question)))
    assert isinstance(stopped, Stop) and stopped.goal_reached is False
    assert stopped.reason.startswith("the agent asked again for something the user does not know: ")
    assert "date of birth" in stopped.reason


def test_an_apology_to_another_question_does_not_stop_the_user() -> None:
    lines = (OPENED, agent("What is your date of birth?"), user(APOLOGY),
             agent("What is your mother's maiden name?"))
    assert offline(view(*lines)) == Say(APOLOGY)


# -- rule 4: confirmations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "I found order AC-1001. Shall I process the refund?",
        "Do you want me to send the label to a@b.c?",
        "Would you like a prepaid return label?",
        "The refund is 49.99 to your card, is that correct?",
        "Can I go ahead?",
    ],
)
def test_a_confirmation_is_answered_yes(question: str) -> None:
    assert offline(view(OPENED, agent(question))) == Say("Yes, please.")


@pytest.mark.parametrize("question", ["Is there anything else I can help you with?", "Something else today?"])
def test_anything_else_ends_the_conversation(question: str) -> None:
    stopped = offline(view(OPENED, agent("Your refund is on its way. " + question)))
    assert stopped == Stop("the agent asked if there is anything else; nothing is left to ask", None)


# -- rule 5: nothing asked -------------------------------------------------------------------------


def test_every_milestone_completed_ends_the_conversation_even_when_the_agent_asks() -> None:
    asking = view(OPENED, agent("What is your order number?"), milestones_done=True)
    assert offline(asking) == Stop("every milestone is completed; nothing is left to pursue", None)
    assert offline(view(OPENED, agent("What is your order number?"))) == Say("AC-1001"), "milestones left: answers"


def test_no_question_ends_the_conversation() -> None:
    stopped = offline(view(OPENED, agent("Your refund of 49.99 has been issued."), agent("It takes 3 days.")))
    assert stopped == Stop("the agent asked nothing more and no milestone is left to pursue", None)


def test_the_agent_not_speaking_since_the_user_ends_the_conversation() -> None:
    assert isinstance(offline(view(OPENED)), Stop)


# -- rule 6: loops ---------------------------------------------------------------------------------


def test_the_same_answer_is_not_given_a_fourth_time() -> None:
    asked = [OPENED, agent("Please provide your order number."), user("AC-1001"),
             agent("What's your order number?"), user("AC-1001")]
    assert offline(view(*asked, agent("What's your order number?"))) == Say("AC-1001")
    asked += [agent("What's your order number?"), user("AC-1001")]
    stopped = offline(view(*asked, agent("Sorry, what's your order number?")))
    assert isinstance(stopped, Stop) and stopped.goal_reached is False
    assert "looping" in stopped.reason


def test_different_questions_in_between_are_not_a_loop() -> None:
    asked = [OPENED, agent("What's your order number?"), user("AC-1001"),
             agent("Which email?"), user("a@b.c"),
             agent("What's your order number?"), user("AC-1001"),
             agent("What's your order number?"), user("AC-1001")]
    assert offline(view(*asked, agent("What's your order number?"))) == Say("AC-1001")


# -- hostile inputs --------------------------------------------------------------------------------


def _bounded(result: Say | Stop) -> None:
    if isinstance(result, Say):
        assert result.text and result.text == result.text.strip() and len(result.text) <= MAX_TEXT
    else:
        assert result.reason and len(result.reason) <= 400 and "\n" not in result.reason


def test_a_huge_question_is_answered_quickly_and_bounded() -> None:
    question = ("order " * 1700)[:9_999] + "?"
    started = time.monotonic()
    result = offline(view(OPENED, agent(question)))
    assert time.monotonic() - started < 5
    assert result == Say("AC-1001")
    again = offline(view(OPENED, agent(question), user(APOLOGY), agent("x" * 9_999 + "?"), user(APOLOGY),
                         agent("x" * 9_999 + "?")))
    _bounded(again)
    assert isinstance(again, Stop)


def test_a_huge_task_is_opened_with_bounded_text() -> None:
    task = "You want " + "your refund, you know, " * 1000
    started = time.monotonic()
    said = offline(view(task=task))
    assert time.monotonic() - started < 5
    _bounded(said)
    assert isinstance(said, Say) and said.text.startswith("I want my refund, I know,")


def test_empty_ish_and_unicode_fact_values() -> None:
    facts = (
        UserFact(name="order_number", value="   "),
        UserFact(name="order_number", value=None),
        UserFact(name=None, value="??"),
        UserFact(name="", value=""),
        UserFact(name="Bestellnummer_注文番号", value="Ünïcødé-№42 😀"),
        UserFact(name="email", value="  émilie@exämple.fr \n"),
    )
    for question in ("What's your order number?", "Ihre Bestellnummer bitte?", "Your e-mail?", "??", "?"):
        _bounded(offline(view(OPENED, agent(question), facts=facts)))
    assert offline(view(OPENED, agent("Your e-mail?"), facts=facts)) == Say("émilie@exämple.fr")
    assert offline(view(OPENED, agent("What's your order number?"), facts=facts)) == Say("AC-1001")


def test_regex_metacharacters_in_facts_are_plain_text() -> None:
    facts = (UserFact(name="order.*(number)[", value=r"a+b?(c)|\1 $^"), UserFact(name="(?P<x>", value="[[["))
    said = offline(view(OPENED, agent("What's your order number?"), facts=facts))
    assert said == Say(r"a+b?(c)|\1 $^")
    _bounded(offline(view(OPENED, agent("(?P<x>)*+?"), facts=facts)))
    _bounded(offline(view(task=r"(.*)+[\d]{99}", facts=facts)))


def test_a_punctuation_only_task_and_agent_lines() -> None:
    cases = ((), (agent("?!"),), (user("..."), agent("???")), (user("..."), agent("")),
             (user(""), agent("!")))
    for lines in cases:
        _bounded(offline(view(*lines, task="?!.,;:-_()[]{}", facts=())))


def test_an_over_long_fact_value_is_cut() -> None:
    facts = (UserFact(name="order_number", value="A" * 10_000),)
    said = offline(view(OPENED, agent("Order number?"), facts=facts))
    assert isinstance(said, Say) and len(said.text) == MAX_TEXT


# -- the model user --------------------------------------------------------------------------------

PERSONA = EvaluationPersona(display_name="Impatient Ivy", description="A busy nurse on a night shift",
                            personality="Curt and in a hurry")


@pytest.fixture
def provider(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[ModelProvider]:
    settings = Settings(llm_provider="openai", llm_base_url=fake_openai.base_url, llm_model="fake-model",
                        llm_max_retries=0, llm_timeout_seconds=5, data_dir=tmp_path)
    made = provider_from_settings(settings)
    assert made is not None
    yield made
    close_provider(made)


def decision(action: str, text: str = "", reason: str = "") -> str:
    return json.dumps({"action": action, "text": text, "reason": reason})


def test_the_model_user_is_chosen_with_a_provider(provider: ModelProvider) -> None:
    chosen = simulated_user(provider)
    assert isinstance(chosen, ModelUser) and chosen.name == "model" and chosen.limits is None


def test_a_reply_is_said(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(decision("reply", "  Hi, my order AC-1001 arrived broken.  "))
    assert ModelUser(provider).next(view()) == Say("Hi, my order AC-1001 arrived broken.")
    assert len(fake_openai.requests) == 1


def test_done_and_give_up_stop(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(decision("done", reason="The agent issued the refund."))
    fake_openai.reply(decision("give_up", reason="The agent keeps refusing."))
    user_ = ModelUser(provider)
    assert user_.next(view(OPENED, agent("Refund issued."))) == Stop("The agent issued the refund.", True)
    assert user_.next(view(OPENED, agent("No."))) == Stop("The agent keeps refusing.", False)


def test_fenced_and_embedded_json_is_accepted(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("```json\n" + decision("reply", "AC-1001") + "\n```")
    fake_openai.reply("Sure! Here it is: " + decision("reply", "a@b.c") + " Hope that helps.")
    user_ = ModelUser(provider)
    assert user_.next(view(OPENED, agent("Order number?"))) == Say("AC-1001")
    assert user_.next(view(OPENED, agent("Email?"))) == Say("a@b.c")


def test_an_unusable_reply_is_asked_again_once(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(decision("reply", "   "))
    fake_openai.reply(decision("reply", "AC-1001"))
    assert ModelUser(provider).next(view(OPENED, agent("Order number?"))) == Say("AC-1001")
    assert len(fake_openai.requests) == 2


def test_garbage_twice_is_a_simulation_failure(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("I am the customer and I want my money back! " * 20)
    fake_openai.reply(decision("dance", "AC-1001"))
    with pytest.raises(SimulationFailure) as raised:
        ModelUser(provider).next(view(OPENED, agent("Order number?")))
    message = raised.value.message
    assert "openai/fake-model" in message
    assert "not a JSON object" in message and '"dance"' in message
    assert message.count("I am the customer") <= 5 and len(message) < 1000
    assert len(fake_openai.requests) == 2


def test_provider_errors_propagate_unchanged(provider: ModelProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(status=400, message="bad request")
    with pytest.raises(ApiError) as raised:
        ModelUser(provider).next(view())
    assert type(raised.value) is FailedPrecondition
    assert len(fake_openai.requests) == 1


def test_the_prompt_carries_the_persona_task_facts_and_reversed_roles(
    provider: ModelProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(decision("reply", "It is AC-1001."))
    milestone = Milestone(goal="Get a replacement", success_criteria="The agent confirms a replacement ships")
    lines = (agent("Hello, how can I help?"), user("My order arrived broken."),
             agent("What's your order number?"))
    ModelUser(provider).next(view(*lines, persona=PERSONA, milestone=milestone))
    body = fake_openai.last_request
    assert body["temperature"] == 0.7
    assert body["response_format"]["type"] == "json_schema"
    messages = body["messages"]
    system = messages[0]
    assert system["role"] == "system"
    for words in ("CUSTOMER", "Impatient Ivy", "A busy nurse on a night shift", "Curt and in a hurry", TASK,
                  "order_number: AC-1001", "email: a@b.c", "Get a replacement",
                  "The agent confirms a replacement ships", '"action"', "give_up", "never invent"):
        assert words in system["content"], words
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "Hello, how can I help?"),
        ("assistant", "My order arrived broken."),
        ("user", "What's your order number?"),
    ]


def test_the_opening_prompt_asks_for_the_first_message(
    provider: ModelProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: Reply(text=decision("reply", "Hello"))
    ModelUser(provider).next(view(facts=()))
    messages = fake_openai.last_request["messages"]
    assert len(messages) == 2 and messages[0]["role"] == "system"
    opening = "(The conversation starts. Write the customer's first message.)"
    assert messages[1] == {"role": "user", "content": opening}
    assert "Impatient Ivy" not in messages[0]["content"]
