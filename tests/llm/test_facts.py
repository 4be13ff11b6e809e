"""The changed-fact detector (convener.llm.facts): contradictions found in each slot, paraphrases left alone,
and bounded work on hostile input."""

from __future__ import annotations

import pytest

from convener.llm.facts import MAX_CHARACTERS, added_figures, conflicts, facts, missing_figures
from convener.llm.offline_judge import OfflineJudge

CHANGED = [
    ("Order A-1001 is pending.", "Order A-1001 is shipped.", "status"),
    ("Your payment of €150 was declined by the bank.", "Your payment of €150 was approved by the bank.", "status"),
    ("Your refund of $84.50 was issued.", "Your refund of $48.50 was issued.", "number"),
    ("You have 3 free returns left this year.", "You have 5 free returns left this year.", "number"),
    ("Order A-1001 is pending.", "Order A-1010 is pending.", "identifier"),
    ("The technician, Miguel, will visit on Tuesday.", "The technician, Daniel, will visit on Tuesday.", "name"),
    ("Emma from our returns team will call you.", "Olivia from our returns team will call you.", "name"),
    ("The technician will visit on Tuesday.", "The technician will visit on Thursday.", "day"),
    ("It was delivered on May 14.", "It was delivered on May 19.", "date"),
    ("You have 3 free returns left this year.", "You have 3 free returns left this month.", "period"),
    ("Your flight leaves at 3:45 pm.", "Your flight leaves at 5:45 pm.", "time"),
    ("Your account is not locked.", "Your account is locked.", "access"),
    ("We have received your documents.", "We have not received your documents.", "negation"),
    ("There is no fee to cancel.", "There is a fee to cancel.", "negation"),
    ("We can't ship to P.O. boxes, so please give a street address.",
     "We can ship to P.O. boxes, so no street address is needed.", "negation"),
]

PARAPHRASES = [
    ("Order A-1001 is pending.", "Order A-1001 hasn't been processed yet; it's still waiting in the queue."),
    ("Your flight departs at 3:45 pm from gate B32.", "Head to gate B32: your flight takes off at 15:45."),
    ("Your flight departs at 3:45 pm.", "Your flight takes off at 3:45 in the afternoon."),
    ("The refund will take 3 to 5 days.", "The refund will take three to five days."),
    ("Your appointment is on March 12 at 9:30 am.", "You're booked for 12 March at half past nine."),
    ("It will be held for 7 days.", "They'll keep it for a week."),
    ("I'm sorry, but we are unable to offer a refund for digital downloads.",
     "Unfortunately digital downloads can't be refunded."),
    ("Your account is not locked; you can sign in.", "Your account is fully accessible, just log in."),
    ("There is no fee to cancel before 48 hours.", "Cancelling more than 48 hours ahead is free."),
    ("Your package will now arrive on Friday instead of Wednesday.",
     "Your delivery is now expected Friday, not Wednesday."),
    ("Our store is open Monday to Saturday and closed on Sundays.",
     "The store opens Monday through Saturday; it doesn't open on Sunday."),
    ("Sarah signed for order B-2207 on May 14.", "Order B-2207 was signed for by Sarah on 14 May."),
    ("Dr. Patel will see you on March 12.", "You're all set to see Dr. Patel on 12 March."),
    ("You have 2,350 points.", "Vous avez 2 350 points."),
]


@pytest.mark.parametrize(("expected", "actual", "slot"), CHANGED)
def test_a_changed_fact_is_found_in_its_slot(expected: str, actual: str, slot: str) -> None:
    found = conflicts(expected, actual)
    assert slot in {conflict.slot for conflict in found}, found


@pytest.mark.parametrize(("expected", "actual", "slot"), CHANGED)
def test_the_changed_fact_is_named_in_the_judges_explanation_and_fails(expected: str, actual: str, slot: str) -> None:
    verdict = OfflineJudge("off").similarity(expected, actual)
    assert verdict.score <= 1
    assert f"changed fact: {slot}:" in verdict.explanation


@pytest.mark.parametrize(("expected", "actual"), PARAPHRASES)
def test_a_paraphrase_changes_no_fact(expected: str, actual: str) -> None:
    assert conflicts(expected, actual) == []
    assert conflicts(actual, expected) == [], "nor the other way round"


def test_a_text_agrees_with_itself() -> None:
    for expected, actual, _ in CHANGED:
        assert conflicts(expected, expected) == [] and conflicts(actual, actual) == []


def test_empty_text_states_no_fact_and_contradicts_nothing() -> None:
    assert conflicts("", "Order A-1001 is shipped.") == []
    assert conflicts("Order A-1001 is pending.", "") == []
    assert conflicts("   ", "\n") == []
    empty = facts("")
    assert not empty.figures and not empty.names and not empty.states and not empty.negates


def test_unicode_is_read_and_does_not_break_the_reading() -> None:
    assert conflicts("Votre commande A-1001 est expédiée le 3 mars.", "Votre commande A-1001 est expédiée le 3 mars.") == []
    assert {c.slot for c in conflicts("Le remboursement de 45 € est fait.", "Le remboursement de 54 € est fait.")} == {"number"}
    assert conflicts("Zoë from Zürich will call.", "Zoë from Zürich will call. 🎉") == []
    assert conflicts("注文 A-1001 は保留中です。", "注文 A-1001 は発送済みです。") == []  # no slot read: no claim made
    assert conflicts("\u0000\ufffd\u202e", "\u200b" * 10) == []


def test_huge_texts_are_read_up_to_a_cap() -> None:
    sentence = "Order A-1001 is pending and Emma will call on Tuesday at 3 pm. "
    huge = sentence * 50_000  # 3 MB
    assert len(huge) > 100 * MAX_CHARACTERS
    assert conflicts(huge, huge) == []
    changed = conflicts("Order A-1001 is pending.", "Order A-1001 is shipped. " + "x" * 5_000_000)
    assert {c.slot for c in changed} == {"status"}
    beyond = "Order A-1001 is pending. " + " filler" * (MAX_CHARACTERS // 7 + 10) + " Order A-1001 is shipped."
    assert conflicts("Order A-1001 is pending.", beyond) == [], "what lies past the cap is not read"
    verdict = OfflineJudge("off").similarity(huge, huge + "!")
    assert verdict.score == 4


def test_figures_written_another_way_are_the_same_figures() -> None:
    assert missing_figures("Call us at 12 pm within 30 minutes.", "Call us at noon within half an hour.") == []
    assert added_figures("It takes 7 days.", "It takes a week.") == []
    assert [f.text for f in missing_figures("It costs $20 and takes 7 days.", "It takes a week.")] == ["20"]
