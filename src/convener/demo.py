"""The demo workspace: Acme's customer-service agent and two dozen of its recorded conversations.

``load_demo`` puts the app ``support`` under projects/demo/locations/global and fills it with
conversations made by a small scenario generator: a handful of scenario templates played against
a bundled order dataset, with one seeded random source choosing orders, wording and timing. All of
it is fixed (timestamps from BASE, IDs demo-001…), so loading again finds every conversation
already stored and identical, and changes nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from pydantic import JsonValue

from convener.api.protojson import Duration, Timestamp
from convener.ces.models import (
    AgentTransfer,
    App,
    Blob,
    Chunk,
    Conversation,
    Image,
    Message,
    Source,
    Span,
    ToolCall,
    ToolResponse,
    ToolsetTool,
    Turn,
)
from convener.ces.names import AppName
from convener.services import Services

APP = AppName("demo", "global", "support")
APP_INFO = App(
    display_name="Acme Support",
    description="Customer service for the Acme online shop: a triage agent hands order questions to the "
    "orders agent and returns and refunds to the refunds agent. Demo data.",
)
BASE = Timestamp.parse("2026-11-02T09:00:00Z")
SEED = 20261102
AGENTS = {"triage": "Triage", "orders": "Orders", "refunds": "Refunds"}
# Media are constants rather than encoded at load time: another zlib build could compress the same
# pixels differently, and a re-load would then no longer match the stored conversation.
PNG_PHOTO = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42"
    "mOYFqUBRAwQCgAgZgRhk2/UWwAAAABJRU5ErkJggg=="
)
WAV_AUDIO = "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAACAgICAgICAgICAgICAgICA"

T = TypeVar("T")
Json = dict[str, JsonValue]


@dataclass(frozen=True)
class Item:
    name: str
    price: float
    care: str
    quantity: int = 1


@dataclass(frozen=True)
class Order:
    id: str
    customer: str
    customer_id: str
    email: str
    status: str  # processing, shipped, delivered or cancelled
    items: tuple[Item, ...]
    carrier: str = ""
    tracking: str = ""

    @property
    def total(self) -> float:
        return round(sum(item.price * item.quantity for item in self.items), 2)

    def lines(self) -> list[JsonValue]:
        return [{"name": i.name, "quantity": i.quantity, "price": i.price} for i in self.items]

    def record(self) -> Json:
        """What the lookup_order tool answers."""
        found: Json = {"orderId": self.id, "status": self.status.upper(), "items": self.lines(),
                       "total": self.total}
        return found | ({"carrier": self.carrier, "tracking": self.tracking} if self.carrier else {})


ORDERS = (
    Order("A-1001", "Maya Chen", "C-201", "maya@example.com", "delivered",
          (Item("Ceramic pour-over set", 34.0, "dishwasher safe; avoid sudden temperature changes"),)),
    Order("A-1002", "Jonas Weber", "C-202", "jonas@example.com", "shipped",
          (Item("Wool throw blanket", 89.0, "hand wash cold and dry flat"),), "DHL", "JD0146000023"),
    Order("A-1003", "Giulia Rossi", "C-203", "giulia@example.com", "processing",
          (Item("Espresso cups, set of 4", 24.5, "dishwasher safe"),
           Item("Milk frother", 19.9, "wipe the whisk clean and never submerge the handle"))),
    Order("A-1004", "Sam Okafor", "C-204", "sam@example.com", "delivered",
          (Item("Linen apron", 22.0, "machine wash at 40 °C", quantity=2),)),
    Order("A-1005", "Priya Natarajan", "C-205", "priya@example.com", "shipped",
          (Item("Cast-iron skillet", 45.0, "hand wash, dry at once and oil lightly; it is oven safe"),),
          "UPS", "1Z999AA10123456784"),
    Order("A-1006", "Lucas Martin", "C-206", "lucas@example.com", "cancelled",
          (Item("Bamboo cutting board", 18.5, "hand wash and oil monthly"),)),
    Order("A-1007", "Emma Larsen", "C-207", "emma@example.com", "processing",
          (Item("Glass storage jars, set of 6", 29.0, "dishwasher safe, lids by hand"),)),
    Order("A-1008", "Diego Alvarez", "C-208", "diego@example.com", "delivered",
          (Item("Chef's knife", 79.0, "hand wash only and hone regularly"),
           Item("Knife sheath", 9.0, "wipe clean"))),
)
OPEN = ("processing", "shipped", "delivered")
ADDRESSES = ("12 Harbor Street, Portland, ME 04101", "450 Pine Avenue, Apt 3, Boulder, CO 80302")
# The order status scenario in each language it is recorded in: ask, answer, thanks, bye, statuses.
PHRASES = {
    "en-US": ("Hi! Where is my order {id}?", "Your order {id} ({total}) {status}.", "Great, thanks!",
              "You're welcome. Have a nice day!",
              {"processing": "is being packed and ships within two days",
               "shipped": "is on its way with {carrier}, tracking number {tracking}",
               "delivered": "was delivered", "cancelled": "was cancelled and fully refunded"}),
    "de-DE": ("Hallo! Wo ist meine Bestellung {id}?", "Ihre Bestellung {id} ({total}) {status}.",
              "Super, danke!", "Gern geschehen. Einen schönen Tag noch!",
              {"processing": "wird gerade verpackt und in zwei Tagen versendet",
               "shipped": "ist mit {carrier} unterwegs, Sendungsnummer {tracking}",
               "delivered": "wurde zugestellt", "cancelled": "wurde storniert und vollständig erstattet"}),
    "it-IT": ("Ciao! Dov'è il mio ordine {id}?", "Il suo ordine {id} ({total}) {status}.",
              "Perfetto, grazie!", "Prego. Buona giornata!",
              {"processing": "è in preparazione e partirà entro due giorni",
               "shipped": "è in viaggio con {carrier}, numero di spedizione {tracking}",
               "delivered": "è stato consegnato", "cancelled": "è stato annullato e rimborsato per intero"}),
}


def _ms(milliseconds: int) -> Duration:
    return Duration(milliseconds * 1_000_000)


@dataclass
class Recorder:
    """Records one conversation as it is played: messages, and the span tree of each turn.

    A millisecond clock advances with every step, so messages are ordered, every child span lies
    inside its turn's root span, and nothing depends on the wall clock.
    """

    rng: random.Random
    clock: Timestamp
    agent: str
    language: str
    defaults: Json
    simulated: bool = False
    turns: list[Turn] = field(default_factory=list, init=False)
    _messages: list[Message] = field(default_factory=list, init=False)  # of the turn being recorded
    _spans: list[Span] = field(default_factory=list, init=False)
    _turn_start: Timestamp | None = field(default=None, init=False)
    _intended: str | None = field(default=None, init=False)
    _calls: int = field(default=0, init=False)

    # Only Random.random() is promised to give the same sequence on every Python version, so every
    # other draw is built on it: the demo must come out identical wherever it is re-loaded.
    def between(self, low: int, high: int) -> int:
        return low + int(self.rng.random() * (high - low + 1))

    def pick(self, options: Sequence[T]) -> T:
        return options[int(self.rng.random() * len(options))]

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def _advance(self, low: int, high: int) -> Timestamp:
        self.clock = self.clock + _ms(self.between(low, high))
        return self.clock

    def _span(self, name: str, kind: str, low: int, high: int, **attributes: JsonValue) -> None:
        start = self._advance(1, 3)
        end = self._advance(low, high)
        attributes = {"type": kind, "agent": self.agent, **attributes}
        self._spans.append(Span(name=name, start_time=start, end_time=end, attributes=attributes))

    def _emit(self, role: str, *chunks: Chunk) -> None:
        self._messages.append(Message(role=role, chunks=list(chunks), event_time=self.clock))

    def _close_turn(self) -> None:
        if self._turn_start is None:
            return
        end = self._advance(1, 4)
        root = Span(name="turn", start_time=self._turn_start, end_time=end, child_spans=self._spans,
                    attributes={"type": "TURN", "turn": len(self.turns) + 1, "agent": self.agent})
        self.turns.append(Turn(messages=self._messages, root_span=root, user_intended_text=self._intended))
        self._messages, self._spans, self._turn_start = [], [], None

    def user(
        self, *chunks: Chunk | str, intended: str | None = None, pause: tuple[int, int] = (4_000, 25_000)
    ) -> None:
        """Open a turn with the end user's input (a str is a text chunk), after a moment to type or speak."""
        first = not self.turns and self._turn_start is None
        self._close_turn()
        if first:  # the session starts with the app's variable defaults, before any input
            self._emit("agent", Chunk(default_variables=self.defaults))
        else:
            self._advance(*pause)
        self._turn_start = self.clock
        # The simulator knows what its caller meant to say; only it records that, for word error rates.
        self._intended = intended if self.simulated else None
        self._emit("user", *(Chunk(text=chunk) if isinstance(chunk, str) else chunk for chunk in chunks))
        self._span("guardrail", "GUARDRAIL", 3, 25, guardrail="input_safety", verdict="ALLOW")

    def say(self, text: str) -> None:
        self._span("llm", "LLM", 400, 1_800, model="offline")
        self._emit("agent", Chunk(text=text))

    def exchange(self, text: str, answer: str) -> None:
        self.user(text)
        self.say(answer)

    def transfer(self, agent: str) -> None:
        if agent == self.agent:  # the session already runs there: another agent called it as a tool
            return
        self._span("llm", "LLM", 250, 900, model="offline")
        self._span("agent_transfer", "AGENT_TRANSFER", 2, 15, target=agent)
        target = f"{APP}/agents/{agent}"
        transfer = AgentTransfer(target_agent=target, display_name=AGENTS[agent])
        self._emit("agent", Chunk(agent_transfer=transfer))
        self.agent = agent

    def _call(self, tool: str, args: Json, output: Json, toolset: str | None) -> Chunk:
        """Emit the agent's call; return the response that answers it (same id and tool)."""
        self._calls += 1
        self._span("llm", "LLM", 300, 1_200, model="offline")
        call_id, agent = f"call-{self._calls}", AGENTS[self.agent] if self.agent != "triage" else None
        persisted = None if toolset else f"{APP}/tools/{tool}"
        from_set = ToolsetTool(toolset=f"{APP}/toolsets/{toolset}", tool_id=tool) if toolset else None
        call = ToolCall(id=call_id, agent_name=agent, tool=persisted, toolset_tool=from_set, args=args)
        self._emit("agent", Chunk(tool_call=call))
        return Chunk(tool_response=ToolResponse(
            id=call_id, agent_name=agent, tool=persisted, toolset_tool=from_set, response={"output": output}))

    def tool(self, tool: str, args: Json, output: Json, toolset: str | None = None) -> None:
        """A tool the agent runs itself: call, execution span, response."""
        response = self._call(tool, args, output, toolset)
        self._span(f"tool:{tool}", "TOOL", 40, 650, tool=tool)
        self._emit("agent", response)

    def client_tool(self, tool: str, args: Json, output: Json) -> None:
        """A client-side tool: the agent's turn ends with the call and the client answers as user input."""
        self.user(self._call(tool, args, output, None), pause=(150, 600))

    def lookup(self, order: Order, agent: str) -> None:
        """The usual start of a request: hand over to the agent in charge, which looks the order up."""
        self.transfer(agent)
        self.tool("lookup_order", {"orderId": order.id}, order.record())

    def finish(self) -> list[Turn]:
        self._close_turn()
        return self.turns


def _status(r: Recorder, o: Order) -> str:
    _, answer, _, _, statuses = PHRASES[r.language]
    status = statuses[o.status].format(carrier=o.carrier, tracking=o.tracking)
    return answer.format(id=o.id, total=f"${o.total:.2f}", status=status)


def order_status(r: Recorder, o: Order) -> None:
    ask, _, thanks, bye, _ = PHRASES[r.language]
    r.user(ask.format(id=o.id))
    r.lookup(o, "orders")
    r.say(_status(r, o))
    if r.chance(0.6):
        r.exchange(thanks, bye)


def refund(r: Recorder, o: Order) -> None:
    r.user(f"I'd like to return the {o.items[0].name} from order {o.id} and get my money back.")
    r.lookup(o, "refunds")
    r.tool("check_refund_eligibility", {"orderId": o.id}, {"eligible": True, "amount": o.total},
           toolset="payments")
    r.say(f"Order {o.id} is within our 30-day window, so you can get ${o.total:.2f} back. Shall I go ahead?")
    r.user(r.pick(("Yes please.", "Yes, go ahead.", "Please do.")))
    refund_id = f"R-{o.id[2:]}{r.between(10, 99)}"
    r.tool("issue_refund", {"orderId": o.id, "amount": o.total}, {"refundId": refund_id, "state": "PENDING"},
           toolset="payments")
    r.say(f"Done: refund {refund_id} shows up within 3-5 business days. A confirmation went to {o.email}.")
    r.exchange("Thank you!", "You're welcome!")


def address_change(r: Recorder, o: Order) -> None:
    r.user(f"Can I still change the delivery address for order {o.id}?")
    r.lookup(o, "orders")
    if o.status != "processing":
        r.say(f"I'm sorry, order {o.id} has already shipped, so I can't change it any more. You can redirect "
              f"the parcel on the {o.carrier} website with tracking number {o.tracking}.")
        return
    address = r.pick(ADDRESSES)
    r.exchange("Yes, it hasn't shipped yet. What's the new address?", address)
    r.tool("update_address", {"orderId": o.id, "address": address}, {"updated": True})
    r.say(f"Done: order {o.id} will go to {address}.")


def product_question(r: Recorder, o: Order) -> None:
    item = r.pick(o.items)
    r.user(f"Quick question about the {item.name}: how do I take care of it?")
    found: Json = {"name": item.name, "price": item.price, "care": item.care, "inStock": True}
    r.tool("search_products", {"query": item.name}, {"products": [found]}, toolset="catalog")
    r.say(f"The {item.name} (${item.price:.2f}): {item.care}.")
    if r.chance(0.5):
        r.exchange("And do you ship to Canada?", "We do: it takes 5-8 business days and costs $12.")


def escalation(r: Recorder, o: Order) -> None:
    r.user(f"My order {o.id} still hasn't arrived. It's been two weeks!")
    r.lookup(o, "orders")
    r.say(f"I'm sorry about the wait. Order {o.id} is in transit with {o.carrier}, tracking {o.tracking}.")
    r.exchange("That's what it said last week too. I want to talk to a person.",
               "I understand. A colleague can open a trace with the carrier. Shall I hand this over?")
    if r.chance(0.6):
        r.exchange("What can they do that you can't?",
                   "They can ask the carrier to search for the parcel and send a replacement if it is lost.")
    r.exchange("Yes, hand it over.", f"Should they reach you at {o.email}?")
    r.user("Yes, that's right.")
    ticket = f"T-{r.between(40_000, 49_999)}"
    r.tool("escalate_to_human", {"orderId": o.id, "reason": "parcel delayed"},
           {"ticket": ticket, "queue": "shipping"})
    r.say(f"Ticket {ticket} is open; our team will email you within 24 hours.")
    r.exchange("OK, thanks.", "Thank you for your patience.")


def client_cart(r: Recorder, o: Order) -> None:
    r.user("The checkout button does nothing. Can you check my cart?")
    r.client_tool("get_cart", {}, {"items": o.lines(), "coupon": "FALL10", "total": o.total})
    r.say(f"I see {len(o.items)} item(s) for ${o.total:.2f}. The coupon FALL10 expired on October 31 and "
          "blocks checkout; remove it and the button works again.")
    r.exchange("That did it, thanks!", "Happy to help!")


def damaged_item(r: Recorder, o: Order) -> None:
    item = o.items[0]
    r.user(f"My {item.name} from order {o.id} arrived broken. Here's a photo.",
           Chunk(image=Image(mime_type="image/png", data=PNG_PHOTO, alt_text=f"A damaged {item.name}")))
    r.lookup(o, "refunds")
    rma = f"RMA-{r.between(7_000, 7_999)}"
    r.tool("create_return", {"orderId": o.id, "item": item.name, "reason": "DAMAGED"}, {"rma": rma})
    r.say(f"I'm sorry it arrived damaged. Return {rma} is open; a prepaid label is on its way to {o.email}.")


def voice_call(r: Recorder, o: Order) -> None:
    spoken = " ".join(o.id.replace("-", "").lower())  # what speech recognition makes of "A-1005"
    r.user(Chunk(blob=Blob(mime_type="audio/wav", data=WAV_AUDIO)),
           Chunk(transcript=f"hi i'm calling about order {spoken} when will it arrive"),
           intended=f"Hi, I'm calling about order {o.id}. When will it arrive?")
    r.lookup(o, "orders")
    r.say(_status(r, o))
    r.user(Chunk(transcript="okay thank you bye"), intended="Okay, thank you, bye.", pause=(1_200, 3_000))
    r.say("Goodbye!")


def page_event(r: Recorder, o: Order) -> None:
    r.user(Chunk(payload={"event": "order_page_viewed", "orderId": o.id, "page": f"/account/orders/{o.id}"}))
    r.lookup(o, "orders")
    r.say(f"Hi {o.customer.split()[0]}! {_status(r, o)} Anything I can help with?")
    r.exchange("No, that's all I wanted to know.", "Great. Enjoy your day!")


def sign_in(r: Recorder, o: Order) -> None:
    r.exchange("Hi, what did I order last time?", "Sure! Please sign in so I can see your account.")
    # Signing in on the website updates the session's variables: a variables-only user input.
    r.user(Chunk(updated_variables={"customer_id": o.customer_id, "logged_in": True, "name": o.customer}))
    r.lookup(o, "orders")
    names = " and ".join(item.name for item in o.items)
    r.say(f"Thanks, {o.customer.split()[0]}. Your last order, {o.id}, was the {names} for ${o.total:.2f}.")


Scenario = Callable[[Recorder, Order], None]
SCENARIOS: dict[str, tuple[Scenario, tuple[str, ...]]] = {  # name: (template, order statuses it fits)
    "order_status": (order_status, (*OPEN, "cancelled")),
    "refund": (refund, ("delivered",)),
    "address_change": (address_change, ("processing", "shipped")),
    "product_question": (product_question, OPEN),
    "escalation": (escalation, ("shipped",)),
    "client_tool": (client_cart, OPEN),
    "damaged_item": (damaged_item, ("delivered",)),
    "voice_call": (voice_call, OPEN),
    "event": (page_event, OPEN),
    "variables": (sign_in, OPEN),
}


class Plan(NamedTuple):
    scenario: str
    source: Source = Source.LIVE
    language: str = "en-US"
    entry: str = "triage"
    legacy_messages: bool = False  # also fill the deprecated top-level messages, as old clients did


SIM, EVAL, TOOL = Source.SIMULATOR, Source.EVAL, Source.AGENT_TOOL
PLAN = (  # demo-001, demo-002, …: mostly live traffic, with every other source and three languages
    Plan("order_status", legacy_messages=True), Plan("refund"), Plan("product_question"),
    Plan("address_change"), Plan("damaged_item"), Plan("order_status", language="de-DE"), Plan("escalation"),
    Plan("client_tool"), Plan("voice_call"), Plan("event"), Plan("variables"), Plan("order_status", SIM),
    Plan("refund", EVAL), Plan("product_question", EVAL), Plan("address_change", SIM), Plan("escalation"),
    Plan("order_status", TOOL, entry="orders"), Plan("refund", TOOL, entry="refunds"),
    Plan("order_status", language="it-IT"), Plan("voice_call", SIM), Plan("refund"),
    Plan("order_status", EVAL), Plan("product_question"), Plan("address_change"),
)
RELEASE_V2 = 12  # conversations from this index on ran on version v2 of the app


def demo_conversations() -> list[tuple[str, Conversation]]:
    """(conversation ID, conversation) for the whole demo, the same on every call."""
    rng = random.Random(SEED)
    made = []
    for index, plan in enumerate(PLAN):
        template, statuses = SCENARIOS[plan.scenario]
        eligible = [order for order in ORDERS if order.status in statuses]
        order = eligible[int(rng.random() * len(eligible))]
        start = BASE + _ms(index * 47 * 60_000 + int(rng.random() * 20 * 60_000))
        signed_in = plan.scenario != "variables"
        defaults: Json = {
            "shop": "Acme", "channel": "phone" if plan.scenario == "voice_call" else "web",
            "language": plan.language, "logged_in": signed_in,
            "customer_id": order.customer_id if signed_in else None,
        }
        recorder = Recorder(rng, start, plan.entry, plan.language, defaults, simulated=plan.source is SIM)
        template(recorder, order)
        turns = recorder.finish()
        version = "v2" if index >= RELEASE_V2 else "v1"
        made.append((f"demo-{index + 1:03d}", Conversation(
            turns=turns, source=plan.source, entry_agent=f"{APP}/agents/{plan.entry}",
            app_version=f"{APP}/versions/{version}", language_code=plan.language,
            # Only live traffic goes through a deployment; simulations and evals run a version directly.
            deployment=f"{APP}/deployments/prod" if plan.source is Source.LIVE else None,
            messages=[m for turn in turns for m in turn.messages or ()] if plan.legacy_messages else None,
        )))
    return made


def load_demo(services: Services) -> str:
    """Load the demo workspace in one transaction; a repeat stores nothing. Returns a one-line summary."""
    conversations = demo_conversations()
    created = 0
    with services.database.transaction() as connection:
        services.apps.ensure(connection, APP, APP_INFO)
        app_pk = services.apps.app_pk(connection, APP)
        for conversation_id, conversation in conversations:
            name = APP.conversation(conversation_id)
            # The demo owns its names: a newer Convener's demo replaces an older one's.
            created += services.conversations.store(connection, app_pk, name, conversation, replace=True).created
    return f"{APP}: {len(conversations)} conversations ({created} new)"
