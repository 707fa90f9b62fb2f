"""Demo users and question sets for `questions demo` (and `make run` on its first start)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from questions import roles, services
from questions.models import QuestionSet

PASSWORD = "demo"

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

SETS: list[dict[str, Any]] = [
    {
        "slug": "gestures",
        "name": "Gestures",
        "description": "When the robot should move, and how lively (seed 000).",
        "versions": [GESTURES_V1, GESTURES_V2],
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
            {"name": "no state", "tags": ["edge"], "state": None},
        ],
    },
    {
        "slug": "support-routing",
        "name": "Support routing",
        "description": "Route a support message to a desk, with urgency and frustration.",
        "versions": [SUPPORT],
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
        ],
    },
    {
        "slug": "shell-guard",
        "name": "Shell command guard",
        "description": "How risky is a shell command an agent wants to run?",
        "versions": [SHELL_GUARD],
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


@transaction.atomic
def demo_load() -> list[str]:
    """Create what is missing; what exists is left as it is. Returns what was done."""
    done = []
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
        for i, document in enumerate(spec_["versions"]):
            version = services.version_create(
                question_set=question_set,
                document=document,
                author=users["author"],
                parent=previous,
                note="demo",
            )
            if i < len(spec_["versions"]) - 1:
                version = services.version_submit(version=version, author=users["author"])
            previous = version
        services.sample_states_import(
            question_set=question_set, items=spec_["states"], author=users["author"]
        )
        done.append(
            f"set {question_set.slug} ({len(spec_['versions'])} version(s), "
            f"{len(spec_['states'])} sample states)"
        )
    return done
