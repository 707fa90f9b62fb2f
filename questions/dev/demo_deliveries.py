"""More labelled refund requests for the demo's `refund-triage` set, so that `make run` shows a
suggestion proven on held-out states (`questions.services.suggestions`): deliveries gone wrong
that ask for a refund — v1's `desk` sends them to billing, as the word "refund" is billing's and
nothing in shipping's description names a box, a courier or a delivery — and billing requests
whose only billing word is "refund". From the failing deliveries on the training side the
stand-in drafts "closer" (shipping gains the words they share: box, courier, delivered,
arrived), proven better on the held-out deliveries; "apart" (billing loses the phrase that
pulled them: its refund), refuted on the held-out billing requests, which lose their desk; and
"by heart", which fits the states it was drafted from and is not proven on the others."""

from __future__ import annotations

#: (name, channel, message, orders so far): expected on shipping, urgency 2, no churn risk
DELIVERIES: list[tuple[str, str, str, int]] = [
    (
        "left at the wrong door",
        "email",
        "The courier left the box at the wrong door. I want a refund.",
        4,
    ),
    (
        "tracking says delivered",
        "chat",
        "Tracking says delivered, but no box arrived. Refund please.",
        2,
    ),
    (
        "box over the fence",
        "email",
        "The courier threw the box over the fence and it broke. Refund.",
        6,
    ),
    (
        "tracking frozen",
        "chat",
        "The tracking has not moved and the courier does not answer. Refund me.",
        1,
    ),
    ("box half empty", "email", "The box arrived open and half empty. I want my refund.", 3),
    (
        "unknown neighbour",
        "chat",
        "The box was delivered to a neighbour I do not know. Refund or resend.",
        7,
    ),
    (
        "box in the rain",
        "email",
        "The courier never rang; the box was delivered into the rain. Refund it.",
        5,
    ),
    (
        "marked delivered",
        "chat",
        "The courier marked it delivered while I was home all day. Refund.",
        9,
    ),
    ("crushed box", "email", "The box arrived crushed and the courier just drove off. Refund.", 2),
    ("wrong town", "chat", "Tracking shows the box in the wrong town. Refund me.", 3),
    (
        "neighbour kept it",
        "email",
        "The box was delivered next door and they kept it. I want a refund.",
        8,
    ),
    (
        "courier says delivered",
        "chat",
        "The courier says he delivered, my doorbell camera shows nobody. Refund.",
        4,
    ),
    ("wet box", "email", "The box arrived wet and the courier did not care. Partial refund?", 11),
    ("courier fee", "chat", "The courier wants a fee before handing over the box. Refund that.", 2),
    (
        "dead tracking number",
        "email",
        "The tracking number does not work and no box arrived. Refund.",
        1,
    ),
    (
        "doorstep theft",
        "chat",
        "Delivered to my doorstep and the box was gone within the hour. Refund?",
        6,
    ),
    (
        "courier no show",
        "email",
        "The courier never showed up, the tracking still says today. Refund me.",
        3,
    ),
    ("opened box", "chat", "My box arrived opened and taped shut again. I want a refund.", 5),
    (
        "signed by someone else",
        "email",
        "Tracking says delivered, signed by a name I do not know. Refund.",
        2,
    ),
    (
        "courier left a note",
        "chat",
        "The courier left a note, no box, and the depot is closed. Refund.",
        7,
    ),
    (
        "box never arrived",
        "email",
        "Two weeks and the box never arrived; the courier blames you. Refund.",
        4,
    ),
    ("wrong box arrived", "chat", "A box arrived with someone else's shoes in it. Refund mine.", 3),
    (
        "tracking in circles",
        "email",
        "The tracking goes in circles and no box arrived. Refund the lot.",
        6,
    ),
    (
        "courier broke it",
        "chat",
        "The courier dropped the box on the stairs; the lamp is broken. Refund.",
        2,
    ),
    (
        "box at the post office",
        "email",
        "The box was delivered to a post office across town. Refund me.",
        5,
    ),
    ("courier lost the box", "chat", "The courier admits they lost the box. Refund now.", 8),
    (
        "empty box arrived",
        "email",
        "An empty box arrived, the tracking weight says it was full. Refund.",
        3,
    ),
    (
        "delivered to the gate",
        "chat",
        "Delivered to the gate, the courier said; nothing is at my gate. Refund.",
        1,
    ),
    (
        "heater smoke",
        "email",
        "The box arrived smelling of smoke and the heater inside is black. Refund.",
        4,
    ),
    ("courier was rude", "chat", "The courier was rude and took the box back with him. Refund.", 9),
    (
        "tracking shows abroad",
        "email",
        "Tracking shows my box abroad for a week. Refund please.",
        2,
    ),
    (
        "two boxes one missing",
        "chat",
        "Only one box of two arrived; the courier has no idea. Refund the other.",
        6,
    ),
    (
        "box delivered at night",
        "email",
        "The courier delivered the box at 3 am to the street. It is gone. Refund.",
        5,
    ),
    (
        "tracking never updated",
        "chat",
        "Tracking never updated after pickup and no box arrived. Refund me.",
        2,
    ),
    (
        "box left in the hall",
        "email",
        "The box was delivered to the shared hall and vanished. Refund.",
        7,
    ),
    (
        "courier kept the box",
        "chat",
        "The courier says he kept the box for my safety. Refund it.",
        3,
    ),
]

#: (name, channel, message, orders so far): expected on billing, urgency 1, no churn risk
REFUND_ONLY: list[tuple[str, str, str, int]] = [
    ("message bundle bought twice", "email", "Please refund the message bundle I bought twice.", 3),
    ("told it was free", "chat", "I was told the upgrade was free. I want a refund.", 5),
    ("cannot see my refund", "email", "I cannot see my refund on my statement.", 2),
    ("message credits", "chat", "Refund my unused message credits, please.", 7),
    (
        "told refund approved",
        "email",
        "Your agent told me the refund was approved. Where is it?",
        4,
    ),
    ("cannot find the refund", "chat", "I cannot find the refund for my returned jacket.", 1),
    ("premium messages", "email", "Refund the premium messages add-on I cancelled.", 9),
    ("refund you told me", "chat", "The refund you told me about last week never came.", 12),
    ("message fee on bill", "email", "Please refund the extra message fee on my bill.", 6),
    ("cannot use the voucher", "chat", "I cannot use the voucher, so refund it to my account.", 3),
    ("told to ask for refund", "email", "Support told me to ask here for my refund.", 2),
    ("message alerts", "chat", "Refund the message alerts, I never turned them on.", 4),
    ("cannot claim online", "email", "I cannot claim my refund online, the form fails.", 5),
    ("told twice", "chat", "I was told twice that my refund is on its way.", 8),
    ("bulk message plan", "email", "Refund the bulk message plan for May, we stopped using it.", 3),
    ("cannot wait a month", "chat", "I cannot wait another month for this refund.", 6),
    (
        "told to keep receipt",
        "email",
        "I was told to keep the receipt for a refund; here it is.",
        2,
    ),
    ("voice message service", "chat", "Refund the voice message service on my last bill.", 1),
    ("cannot reach anyone", "email", "I cannot reach anyone about my refund by phone.", 4),
    ("told no fee", "chat", "You told me there would be no fee. Refund it.", 7),
    ("message pack", "email", "Refund the message pack, it expired unused.", 3),
    ("cannot see the credit", "chat", "I cannot see the store refund credit on my account.", 5),
    ("told by the shop", "email", "The shop told me you handle the refund, not them.", 2),
    ("welcome message fee", "chat", "Refund the welcome message fee, it should be free.", 6),
]


def _states(rows, desk: str, urgency: int, tag: str) -> list[dict]:
    return [
        {
            "name": name,
            "tags": [desk, tag],
            "state": {"channel": channel, "message": message, "orders": orders},
            "expected": {"desk": desk, "urgency": urgency, "churn_risk": False},
        }
        for name, channel, message, orders in rows
    ]


DELIVERY_STATES = _states(DELIVERIES, "shipping", 2, "delivery") + _states(
    REFUND_ONLY, "billing", 1, "refund-only"
)
