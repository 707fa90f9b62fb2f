"""The demo's question sets as data: their versions, the review step each version is left at,
and their sample states (`questions.dev.demo` builds them)."""

from __future__ import annotations

from typing import Any

from questions.dev.demo_refunds import REFUND_STATES, REFUND_TRIAGE

#: the question the demo suggests rewordings of, on its set's approved v1 (drafted and proven by
#: the stand-in when the demo loads: one candidate proven better, one refuted)
SUGGESTED = ("refund-triage", "desk")
#: seed 001's three tiers on one set: your own rules (`custom`, questions/dev/demo_rules.py), the
#: stand-in in Jev's place (`typesafe`) and a chat model's (`llm`, the stand-in's chat wire)
SIDE_BY_SIDE = ("custom", "typesafe", "llm")

GESTURES_V1: dict[str, Any] = {
    "intent": {
        "type": "choice",
        "instructions": "Is the latest user line an explicit request for a movement?",
        "criteria": {
            "explicit": {
                "what": "asks for a movement",
                "examples": ["can you wave", "clap for me"],
            },
            "incidental": {"what": "mentions a movement in passing"},
            "none": None,
        },
    },
    "start": {
        "type": "noul",
        "instructions": "Should a new gesture start now?",
        "criteria": {"true": {"examples": ["wave please"]}, "false": {"examples": ["hello there"]}},
    },
    "energy": {
        "type": "score",
        "instructions": "How much energy does the moment call for?",
        "criteria": ["still", "calm", "lively", "playful"],
    },
}

GESTURES_V2: dict[str, Any] = {
    **GESTURES_V1,
    "intent": {
        "type": "choice",
        "instructions": "Is the latest user line an explicit request for a movement?",
        "criteria": {
            "explicit": {
                "what": "asks the robot to make a movement now",
                "examples": ["can you wave", "clap for me"],
            },
            "incidental": {"what": "mentions a movement in passing, without asking for one"},
            "none": "talks about something else, or it is unclear",
        },
    },
}

SUPPORT: dict[str, Any] = {
    "is_urgent": {
        "type": "noul",
        "instructions": "Does this convey urgency?",
        "criteria": {"true": "Explicitly time-sensitive", "false": "No urgency expressed"},
    },
    "department": {
        "type": "choice",
        "instructions": "Which department should handle this?",
        "criteria": {
            "billing": "Payments, invoices, payouts",
            "technical": "The product does not work",
            "sales": "Buying or upgrading",
            "other": "None of the above, or unclear",
        },
    },
    "frustration": {
        "type": "score",
        "instructions": "How frustrated is the customer?",
        "criteria": ["Calm", "Frustrated", "Very angry"],
    },
}

SHELL_GUARD: dict[str, Any] = {
    "risk": {
        "type": "score",
        "instructions": "How much damage could running `command` do on the user's machine?",
        "criteria": [
            {"what": "reads only; changes nothing", "examples": ["ls -la", "git status"]},
            {
                "what": "changes files inside the project, easy to undo",
                "examples": ["npm install", "git commit -m wip"],
            },
            {
                "what": "changes or deletes files that are hard to get back",
                "examples": ["git reset --hard", "rm -r build"],
            },
            {
                "what": "can destroy data or the system, or send secrets away",
                "examples": ["rm -rf /", "curl … | sh", "dd if=/dev/zero of=/dev/sda"],
            },
        ],
    },
    "kind": {
        "type": "choice",
        "instructions": "What does `command` mostly do?",
        "criteria": {
            "inspect": "Looks at files, processes or the network without changing them",
            "build": "Builds, tests or installs the project's own code",
            "modify": "Edits, moves or deletes files",
            "network": {"what": "Downloads or uploads", "not_for": "package installs"},
            "other": "Something else, or it cannot be told from the command",
        },
    },
    "needs_review": {
        "type": "noul",
        "instructions": "Should a person confirm `command` before it runs?",
    },
}


def _support(name: str, text: str, department: str, urgent: bool, frustration: int) -> dict:
    return {
        "name": name,
        "tags": [department],
        "state": text,
        "expected": {"department": department, "is_urgent": urgent, "frustration": frustration},
    }


#: ten more labelled support messages, so that the shuffle control and the stand-in's figures
#: (docs/benchmarks.md) rest on a dozen states, not two
SUPPORT_MORE_STATES: list[dict[str, Any]] = [
    _support(
        "charged twice",
        "I was charged twice on my last invoice, please refund one of the payments.",
        "billing",
        False,
        1,
    ),
    _support(
        "app crashes",
        "The app crashes every time I open the dashboard. It does not work since the update.",
        "technical",
        False,
        1,
    ),
    _support(
        "team locked out",
        "Urgent: nobody on our team can log in, the product is down and we demo in an hour.",
        "technical",
        True,
        2,
    ),
    _support(
        "more seats",
        "We'd like to upgrade to the enterprise plan and buy 20 more seats. Who can help?",
        "sales",
        False,
        0,
    ),
    _support(
        "invoice copy",
        "Could you send me a copy of the March invoice for our accounting?",
        "billing",
        False,
        0,
    ),
    _support(
        "export still broken",
        "Third time I report it: the CSV export is broken and nobody answers. I am very angry.",
        "technical",
        False,
        2,
    ),
    _support(
        "job application",
        "Hello, are you hiring designers? I would like to send you my portfolio.",
        "other",
        False,
        0,
    ),
    _support(
        "refund today",
        "I need my refund today! The payment went through twice and my card is maxed out.",
        "billing",
        True,
        2,
    ),
    _support(
        "nonprofit discount",
        "Do you offer a discount if we buy a yearly licence as a nonprofit?",
        "sales",
        False,
        0,
    ),
    _support(
        "thanks",
        "Just wanted to say thanks, the new feature is great.",
        "other",
        False,
        0,
    ),
]


SETS: list[dict[str, Any]] = [
    {
        "slug": "gestures",
        "name": "Gestures",
        "description": "When the robot should move, and how lively (seed 000).",
        "versions": [GESTURES_V1, GESTURES_V2],
        "steps": ["approve", "approve"],
        "states": [
            {
                "name": "asks to clap",
                "tags": ["explicit"],
                "state": {
                    "conversation": [
                        {"speaker": "assistant", "text": "Hi there."},
                        {
                            "speaker": "user",
                            "text": "can you clap",
                            "transcript": "partial, still speaking",
                        },
                    ],
                    "body": "at rest",
                },
                "expected": {"intent": "explicit", "start": True},
            },
            {
                "name": "mentions dancing",
                "tags": ["incidental"],
                "state": {
                    "conversation": [
                        {"speaker": "user", "text": "I went dancing last night, it was great"}
                    ],
                    "body": "at rest",
                },
                "expected": {"intent": "incidental", "start": False},
            },
            # the provider's schema refuses a null state (the runtime takes it): an empty
            # conversation is the edge a real call can ask about
            {"name": "nothing said", "tags": ["edge"], "state": {"conversation": [], "body": ""}},
        ],
    },
    {
        "slug": "support-routing",
        "name": "Support routing",
        "description": "Route a support message to a desk, with urgency and frustration.",
        "versions": [SUPPORT],
        "steps": ["review"],
        # its newest version is also run through each of these, for the grid side by side
        "side_by_side": SIDE_BY_SIDE,
        "states": [
            {
                "name": "failing payouts",
                "tags": ["billing"],
                "state": "Help! My payouts have been failing for 3 days.",
                "expected": {"department": "billing", "is_urgent": True, "frustration": 1},
            },
            {
                "name": "upgrade question",
                "tags": ["sales"],
                "state": "Hi, what does the team plan cost per seat?",
                "expected": {"department": "sales", "is_urgent": False, "frustration": 0},
            },
            *SUPPORT_MORE_STATES,
        ],
    },
    {
        "slug": "refund-triage",
        "name": "Refund triage",
        "description": "Which desk takes a refund request, how soon, and whether the customer "
        f"may leave: {sum('expected' in s for s in REFUND_STATES)} labelled states, so the "
        "controls, the pass rates and a suggestion's proof have something to say, and a few new "
        "ones to label.",
        "versions": [REFUND_TRIAGE],
        "steps": ["approve"],
        "states": REFUND_STATES,
    },
    {
        "slug": "shell-guard",
        "name": "Shell command guard",
        "description": "How risky is a shell command an agent wants to run?",
        "versions": [SHELL_GUARD],
        "steps": ["draft"],
        "states": [
            {
                "name": "git status",
                "state": {"command": "git status", "cwd": "~/project"},
                "expected": {"risk": 0, "kind": "inspect", "needs_review": False},
            },
            {
                "name": "wipe disk",
                "tags": ["dangerous"],
                "state": {"command": "dd if=/dev/zero of=/dev/sda", "cwd": "/"},
                "expected": {"risk": 3, "kind": "modify", "needs_review": True},
            },
        ],
    },
]
