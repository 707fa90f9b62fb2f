"""Demo users and question sets for `questions demo` (and `make run` on its first start)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.test.utils import override_settings

from questions import roles, services
from questions.dev import standin
from questions.models import Label, QuestionSet

PASSWORD = "demo"
#: seed 001's three tiers on one set: your own rules (`custom`, questions/dev/demo_rules.py), the
#: stand-in in Jev's place (`typesafe`) and a chat model's (`llm`, the stand-in's chat wire)
SIDE_BY_SIDE = ("custom", "typesafe", "llm")
#: what `make run` sets DECISIONS__CUSTOM_BACKEND to, and what the demo's own runs use
DEMO_RULES = "questions.dev.demo_rules:answer"

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


REFUND_TRIAGE: dict[str, Any] = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk should take this refund request?",
        "criteria": {
            "billing": "A charge, an invoice or a refund of money already paid",
            "shipping": "A parcel that is late, lost, damaged or sent back",
            "fraud": "A charge or an order the customer says they never made",
            "other": "Anything else, or it cannot be told from the message",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How soon must someone answer?",
        "criteria": [
            "No rush: a question or a thank-you",
            "This week: an ordinary request",
            "Soon: the customer is waiting on it",
            "Urgent: money is stuck or a deadline is near",
            "Now: a chargeback, a legal threat or an account at risk",
        ],
    },
    "churn_risk": {
        "type": "noul",
        "instructions": "Is the customer likely to leave over this?",
        "criteria": {
            "true": "Says they will cancel, switch or never order again, or is angry",
            "false": "Calm, or asks for help without a threat to leave",
        },
    },
}

#: (name, channel, message, orders so far, desk, urgency, churn risk, tags)
_REFUNDS: list[tuple[str, str, str, int, str, int, bool, list[str]]] = [
    (
        "double charge",
        "email",
        "I was charged twice for order 4412. Please refund one.",
        3,
        "billing",
        2,
        False,
        ["billing"],
    ),
    (
        "refund not arrived",
        "chat",
        "You said my refund was sent 10 days ago. Nothing yet.",
        8,
        "billing",
        3,
        False,
        ["billing", "late"],
    ),
    (
        "chargeback threat",
        "email",
        "Refund me today or I file a chargeback with my bank.",
        1,
        "billing",
        4,
        True,
        ["billing", "angry"],
    ),
    (
        "invoice copy",
        "email",
        "Could you send me the invoice for my March order?",
        12,
        "billing",
        0,
        False,
        ["billing"],
    ),
    (
        "wrong amount",
        "chat",
        "The refund was 12 euros short of what I paid.",
        5,
        "billing",
        2,
        False,
        ["billing"],
    ),
    (
        "subscription renewed",
        "email",
        "My plan renewed although I cancelled last month. I want that money back and I am done.",
        20,
        "billing",
        3,
        True,
        ["billing", "angry"],
    ),
    (
        "coupon not applied",
        "chat",
        "My 10% code did not apply at checkout, can you refund it?",
        2,
        "billing",
        1,
        False,
        ["billing"],
    ),
    (
        "tax question",
        "email",
        "Is VAT refunded too when I return an item?",
        4,
        "billing",
        0,
        False,
        ["billing", "question"],
    ),
    (
        "parcel late",
        "chat",
        "My parcel was due Monday and the tracking has not moved.",
        6,
        "shipping",
        2,
        False,
        ["shipping", "late"],
    ),
    (
        "parcel lost",
        "email",
        "The courier says delivered but nothing came. Refund please.",
        9,
        "shipping",
        3,
        False,
        ["shipping"],
    ),
    (
        "damaged vase",
        "email",
        "The vase arrived in pieces. Photos attached.",
        2,
        "shipping",
        2,
        False,
        ["shipping"],
    ),
    (
        "gift deadline",
        "chat",
        "It is a birthday gift for Saturday. If it does not come I want a full refund.",
        1,
        "shipping",
        3,
        False,
        ["shipping", "late"],
    ),
    (
        "return label",
        "email",
        "How do I get a return label for the shoes?",
        7,
        "shipping",
        1,
        False,
        ["shipping", "question"],
    ),
    (
        "third late order",
        "chat",
        "Third late order in a row. I am switching to another shop after this one.",
        15,
        "shipping",
        2,
        True,
        ["shipping", "angry"],
    ),
    (
        "wrong size sent",
        "email",
        "I ordered a medium and got a small. Exchange or refund?",
        3,
        "shipping",
        1,
        False,
        ["shipping"],
    ),
    (
        "returned to sender",
        "email",
        "My parcel went back to your warehouse. Refund it.",
        2,
        "shipping",
        1,
        False,
        ["shipping"],
    ),
    (
        "missing item",
        "chat",
        "Two of the three books were in the box. Where is the third?",
        11,
        "shipping",
        2,
        False,
        ["shipping"],
    ),
    (
        "never ordered",
        "email",
        "There is an order on my card I never made. Who did this?",
        0,
        "fraud",
        4,
        True,
        ["fraud"],
    ),
    (
        "account taken over",
        "chat",
        "Someone changed my password and ordered a laptop. Stop it now!",
        14,
        "fraud",
        4,
        True,
        ["fraud", "angry"],
    ),
    (
        "unknown charge",
        "email",
        "I see a charge from you but I do not have an account.",
        0,
        "fraud",
        3,
        False,
        ["fraud"],
    ),
    (
        "card stolen",
        "chat",
        "My card was stolen yesterday and used on your site twice.",
        4,
        "fraud",
        4,
        False,
        ["fraud"],
    ),
    (
        "strange address",
        "email",
        "An order shipped to an address in another country. Not me.",
        6,
        "fraud",
        3,
        False,
        ["fraud"],
    ),
    (
        "kid ordered",
        "chat",
        "My son ordered a game with my card without asking. Refund?",
        5,
        "other",
        1,
        False,
        ["edge"],
    ),
    (
        "thank you",
        "email",
        "The refund came through, thanks for the quick help!",
        9,
        "other",
        0,
        False,
        ["question"],
    ),
    (
        "price drop",
        "chat",
        "The jacket is cheaper now than a week ago. Refund the difference?",
        3,
        "billing",
        1,
        False,
        ["billing", "question"],
    ),
    (
        "warranty repair",
        "email",
        "The kettle stopped working after 8 months. Repair or refund?",
        10,
        "other",
        1,
        False,
        ["edge"],
    ),
    (
        "store credit",
        "chat",
        "Can I get store credit instead of a refund to my card?",
        6,
        "billing",
        0,
        False,
        ["billing", "question"],
    ),
    ("unclear complaint", "email", "Not happy. Fix it.", 1, "other", 1, True, ["edge", "angry"]),
    (
        "lawyer letter",
        "email",
        "My lawyer will contact you if I am not refunded by Friday. I will never order again.",
        2,
        "billing",
        4,
        True,
        ["billing", "angry"],
    ),
    (
        "cancel before ship",
        "chat",
        "I ordered by mistake an hour ago, please cancel and refund.",
        4,
        "billing",
        3,
        False,
        ["billing"],
    ),
    (
        "customs fee",
        "email",
        "I had to pay customs on delivery. Will you refund that?",
        2,
        "shipping",
        1,
        False,
        ["shipping", "question"],
    ),
    (
        "loyal customer",
        "chat",
        "Ten years a customer and you lose my parcel and ignore me. Close my account.",
        140,
        "shipping",
        3,
        True,
        ["shipping", "angry"],
    ),
    (
        "newsletter",
        "email",
        "Please stop sending me the newsletter.",
        1,
        "other",
        0,
        False,
        ["edge"],
    ),
    (
        "partial refund split",
        "chat",
        "I returned one of two items; the refund was for both. Just so you know.",
        5,
        "billing",
        0,
        False,
        ["billing"],
    ),
]

REFUND_STATES: list[dict[str, Any]] = [
    {
        "name": name,
        "tags": tags,
        "state": {"channel": channel, "message": message, "orders": orders},
        "expected": {"desk": desk, "urgency": urgency, "churn_risk": churn},
    }
    for name, channel, message, orders, desk, urgency, churn, tags in _REFUNDS
] + [  # not labelled yet: what the labelling page offers first
    {"name": name, "tags": ["new"], "state": {"channel": channel, "message": message, "orders": n}}
    for name, channel, message, n in (
        ("refund or replace", "chat", "The blender leaks. Refund or a new one, either is fine.", 3),
        ("charged after return", "email", "I sent the coat back in May and was charged again.", 7),
        ("where is my money", "chat", "WHERE IS MY MONEY. Third time I ask.", 2),
        ("bank says pending", "email", "My bank shows your refund as pending for a week now.", 5),
    )
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
        f"may leave: {len(_REFUNDS)} labelled states, so the controls and the pass rates have "
        "something to say, and a few new ones to label.",
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


def demo_load() -> list[str]:
    """Create what is missing; what exists is left as it is. Returns what was done.

    A newcomer sees every screen with something on it: `gestures` has v1 and v2 approved, a
    finished run of each, and `production` moved from v1 to v2; `support-routing` waits for
    review; `shell-guard` is a draft. The runs are asked of a stand-in started for the purpose,
    never of a configured provider, so loading the demo costs nothing."""
    server = standin.serve_in_thread()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with override_settings(
            TYPESAFE_API_KEY=standin.KEY,
            TYPESAFE_BASE_URL=base,
            LLM_API_KEY=standin.KEY,
            LLM_BASE_URL=f"{base}/v1",
            DECISIONS_CUSTOM_BACKEND=DEMO_RULES,
        ):
            done, runs, side_by_side = _load_sets()
            finished = [services.batch_execute(run.pk) for run in [*runs, *side_by_side]]
    finally:
        server.shutdown()
        server.server_close()
    done += [f"run {run.pk} of {run.version} ({run.status})" for run in finished if run]
    done += _approve(runs)
    if side_by_side:
        columns = "&".join(f"col=run:{run.pk}" for run in side_by_side)
        slug = side_by_side[0].question_set.slug
        done.append(f"side by side ({', '.join(SIDE_BY_SIDE)}): /sets/{slug}/compare/?{columns}")
    return done + _promote(runs)


@transaction.atomic
def _load_sets() -> tuple[list[str], list[Any], list[Any]]:
    """What was done, the runs of the versions to approve (in review; approved on them once
    they have finished, `_approve`), and the side-by-side runs of a set's newest version
    through `side_by_side`'s backends."""
    done = []
    side_by_side = []
    authors, _ = Group.objects.get_or_create(name=roles.AUTHORS)
    reviewers, _ = Group.objects.get_or_create(name=roles.REVIEWERS)
    user_model = get_user_model()
    users = {}
    for username, group in (("author", authors), ("reviewer", reviewers)):
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model.objects.create_user(username, password=PASSWORD)
            done.append(f"user {username} (password {PASSWORD})")
        user.groups.add(group)
        users[username] = user
    runs = []
    for spec_ in SETS:
        if QuestionSet.objects.filter(slug=spec_["slug"]).exists():
            continue
        question_set = services.question_set_create(
            slug=spec_["slug"],
            name=spec_["name"],
            description=spec_["description"],
            owner=users["author"],
        )
        previous = None
        for document, step in zip(spec_["versions"], spec_["steps"], strict=True):
            version = services.version_create(
                question_set=question_set,
                document=document,
                author=users["author"],
                parent=previous,
                note="demo",
            )
            if previous is None:  # the import checks the expected answers against v1
                services.sample_states_import(
                    question_set=question_set, items=spec_["states"], author=users["author"]
                )
            if step in ("review", "approve"):
                version = services.version_submit(version=version, author=users["author"])
            if step == "approve":  # approved once its run has finished (`_approve`)
                runs.append(
                    services.batch_create(
                        version=version, backend="typesafe", user=users["author"], enqueue=False
                    )
                )
            previous = version
        for backend in spec_.get("side_by_side", ()):
            side_by_side.append(
                services.batch_create(
                    version=previous, backend=backend, user=users["author"], enqueue=False
                )
            )
        done.append(
            f"set {question_set.slug} ({len(spec_['versions'])} version(s), "
            f"{len(spec_['states'])} sample states)"
        )
    return done, runs, side_by_side


def _approve(runs: list[Any]) -> list[str]:
    """Approve each run's version, oldest first, on the run it has just finished — so the
    approval records its evidence run and the model that answered it, as a reviewer's does:
    a set's first version under `production`, a later one under `staging`."""
    done = []
    reviewer = get_user_model().objects.get(username="reviewer")
    for run in sorted(runs, key=lambda r: r.pk):
        version = run.version
        first = not version.question_set.labels.filter(name=Label.BASELINE).exists()
        label = Label.BASELINE if first else "staging"
        version = services.version_approve(
            confirm_weak_evidence=True,
            version=version,
            reviewer=reviewer,
            note="demo",
            label=label,
        )
        done.append(
            f"approved {version.question_set.slug} v{version.number} on run "
            f"{version.approved_evidence_run_id} ({label})"
        )
    return done


def _promote(runs: list[Any]) -> list[str]:
    """Move `production` to the newest approved version of each set the demo ran."""
    done = []
    reviewer = get_user_model().objects.get(username="reviewer")
    for question_set in {run.question_set for run in runs}:
        newest = question_set.versions.filter(status="approved").order_by("-number").first()
        label = question_set.labels.get(name=Label.BASELINE)
        if label.version != newest:
            before = label.version.number
            services.label_move(
                question_set=question_set,
                name=Label.BASELINE,
                version=newest,
                actor=reviewer,
                note="demo: v2 describes every option",
            )
            done.append(
                f"label move: production of {question_set.slug} v{before} → v{newest.number}"
            )
    return done
