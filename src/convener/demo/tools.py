"""The demo app's python tools, over the bundled order dataset (``orders.json``).

These functions are what the app's ``pythonFunction.entryPoint``s name, and the only ones of the demo an
app may name: each is ``@registered`` with the gate (``convener.outside.callables``), having no side
effect a caller could aim (no file, no command, no network). Their type-annotated
parameters and docstrings become the schemas and descriptions agents are offered, so the docstrings
are written for the agent, not for the programmer.

The dataset is read-only and fixed in time: eligibility is judged against its ``asOf`` date, not the
calendar, and writes (a refund, an address change) are confirmed without being kept. Every run of the
demo therefore sees the same shop and records the same conversations, in any process, in any order.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import date
from importlib import resources
from typing import Any

from convener.outside.callables import registered

ORDER_ID = re.compile(r"(?:([A-Za-z]{2})-)?(\d{4})")
"""An order number, AC-1001; on the phone its four digits alone are enough."""
DEFAULT_PREFIX = "AC"
MAX_ADDRESS = 200


@functools.cache
def dataset() -> dict[str, Any]:
    """The bundled dataset, parsed once per process (never modified: callers get views of it)."""
    text = resources.files("convener.demo").joinpath("orders.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _orders() -> dict[str, dict[str, Any]]:
    return {order["id"]: order for order in dataset()["orders"]}


def _normalise(order_id: str) -> str | None:
    match = ORDER_ID.fullmatch(order_id.strip())
    if match is None:
        return None
    return f"{(match[1] or DEFAULT_PREFIX).upper()}-{match[2]}"


def _find(order_id: str) -> tuple[dict[str, Any] | None, str]:
    """The order and its normalised number; None when there is no such order."""
    number = _normalise(order_id)
    if number is None:
        return None, order_id.strip()[:40]
    return _orders().get(number), number


def _total(order: dict[str, Any]) -> float:
    return round(sum(float(item["price"]) * int(item["quantity"]) for item in order["items"]), 2)


def _summary(order: dict[str, Any]) -> str:
    return ", ".join(
        item["name"] if item["quantity"] == 1 else f"{item['quantity']} x {item['name']}"
        for item in order["items"]
    )


@registered
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its number (like AC-1001, or just its four digits).

    Returns the order's status (PROCESSING, SHIPPED, DELIVERED or CANCELLED), items, total in USD and
    the date it was placed; for shipped orders the carrier, tracking number and estimated delivery
    date; the delivery or cancellation date when there is one; and the customer's first name. An
    unknown number gives an error.
    """
    order, number = _find(order_id)
    if order is None:
        return {"error": f"there is no order {number}"}
    customer = dataset()["customers"][order["customer"]]
    found: dict[str, Any] = {
        "orderId": order["id"],
        "status": order["status"],
        "placed": order["placed"],
        "items": [dict(item) for item in order["items"]],
        "summary": _summary(order),
        "total": _total(order),
        "customerFirstName": customer["name"].split()[0],
    }
    for key in ("carrier", "tracking", "estimatedDelivery", "deliveredOn", "cancelledOn"):
        if key in order:
            found[key] = order[key]
    return found


@registered
def list_customer_orders(customer_id: str) -> list[dict[str, Any]]:
    """List a signed-in customer's orders, newest first: number, date placed, status, total and items.

    customer_id is the ID of the signed-in customer (like C-201), never one the user typed.
    """
    mine = [order for order in dataset()["orders"] if order["customer"] == customer_id.strip().upper()]
    mine.sort(key=lambda order: (order["placed"], order["id"]), reverse=True)
    return [
        {"orderId": order["id"], "placed": order["placed"], "status": order["status"], "total": _total(order),
         "summary": _summary(order)}
        for order in mine
    ]


@registered
def check_refund_eligibility(order_id: str) -> dict[str, Any]:
    """Check whether an order can be refunded, and for how much.

    Rules: the order must have been delivered; within 30 days of delivery (60 days for gold
    customers); final-sale items (gift cards) are never refunded. Returns eligible (true or false),
    the reason, the amount refundable in USD, the customer's tier and the refund window in days.
    """
    order, number = _find(order_id)
    if order is None:
        return {"error": f"there is no order {number}"}
    data = dataset()
    tier = data["customers"][order["customer"]]["tier"]
    window = data["refundWindowDays"][tier]
    refundable = [item for item in order["items"] if not item.get("finalSale")]
    amount = round(sum(float(item["price"]) * int(item["quantity"]) for item in refundable), 2)
    verdict: dict[str, Any] = {"orderId": order["id"], "tier": tier, "windowDays": window}
    status = order["status"]
    if status == "CANCELLED":
        reason = f"it was cancelled on {order['cancelledOn']} and already refunded in full"
        return verdict | {"eligible": False, "amount": 0.0, "reason": reason}
    if status != "DELIVERED":
        return verdict | {"eligible": False, "amount": 0.0,
                          "reason": "it has not been delivered yet; once it arrives you have "
                                    f"{window} days to ask for a refund"}
    if not refundable:
        return verdict | {"eligible": False, "amount": 0.0, "reason": "gift cards are final sale"}
    days = (date.fromisoformat(data["asOf"]) - date.fromisoformat(order["deliveredOn"])).days
    verdict["daysSinceDelivery"] = days
    if days > window:
        reason = f"it was delivered {days} days ago, and refunds are possible within {window} days"
        return verdict | {"eligible": False, "amount": 0.0, "reason": reason}
    return verdict | {"eligible": True, "amount": amount,
                      "reason": f"it was delivered {days} days ago, within the {window}-day window"}


@registered
def create_refund(order_id: str, amount: float, reason: str = "other") -> dict[str, Any]:
    """Issue a refund for an order, after check_refund_eligibility said it is eligible and the
    customer confirmed their identity with confirm_identity.

    amount is in USD and may not exceed what check_refund_eligibility allows; reason is one of
    damaged, wrong_item, not_as_described, changed_mind or other. Returns the refund's ID, its status
    (PENDING until the payment provider settles it) and the email the confirmation goes to.
    """
    verdict = check_refund_eligibility(order_id)
    if "error" in verdict:
        return verdict
    if not verdict["eligible"]:
        return {"error": f"order {verdict['orderId']} cannot be refunded: {verdict['reason']}"}
    if not 0 < amount <= verdict["amount"]:
        return {"error": f"the amount must be more than 0 and at most {verdict['amount']:.2f}"}
    order = _orders()[verdict["orderId"]]
    # Derived from the order, so that the same request gives the same refund: the demo keeps no state.
    return {
        "refundId": "RF-" + order["id"].split("-")[1],
        "orderId": order["id"],
        "amount": round(amount, 2),
        "reason": reason,
        "status": "PENDING",
        "email": dataset()["customers"][order["customer"]]["email"],
    }


@registered
def update_delivery_address(order_id: str, address: str) -> dict[str, Any]:
    """Change where an order is delivered. Only orders still PROCESSING (not yet shipped) can change.

    address is the full new delivery address as the customer gave it. Returns the order number and
    the address it will now be delivered to.
    """
    order, number = _find(order_id)
    if order is None:
        return {"error": f"there is no order {number}"}
    if order["status"] != "PROCESSING":
        status = order["status"]
        return {"error": f"order {number} is {status}; only orders not yet shipped can change their address"}
    cleaned = " ".join(address.split())
    if not 5 <= len(cleaned) <= MAX_ADDRESS:
        return {"error": f"an address has 5 to {MAX_ADDRESS} characters"}
    # Confirmed but not kept: the dataset stays as shipped, so every run of the demo sees the same shop.
    return {"orderId": number, "address": cleaned, "updated": True}
