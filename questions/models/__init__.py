"""Persistence only, a module per domain (sets and versions, states, decisions, tokens and
fetches, production ingest, runs, webhooks, teams, the audit log); every model is imported
here, so Django finds them all. Every write goes through `questions/services/`.

Documents and states are kept as JSON *text*: PostgreSQL's jsonb would reorder a choice's
options (declared order is what the author wrote and what the charts show), and a JSONField
stores a JSON `null` state as SQL NULL. Text keeps both exactly.
"""

from questions.models.audit import AppendOnly, AuditEntry
from questions.models.decisions import Decision, DecisionAnswer
from questions.models.ingest import IngestDay, IngestSettings
from questions.models.labels import (
    LabelQueue,
    LabelQueueEntry,
    LabelReservation,
    LabelSettlement,
    StateLabel,
)
from questions.models.runs import (
    BatchItem,
    BatchRun,
    RunMove,
    RunPairing,
    RunReport,
    WorkerHeartbeat,
)
from questions.models.sets import (
    Label,
    LabelMove,
    LintAcceptance,
    QuestionSet,
    ReviewEvent,
    Version,
    VersionQuerySet,
)
from questions.models.states import SampleState, SampleStateRevision
from questions.models.suggestions import Suggestion
from questions.models.teams import CallHold, Membership, Team
from questions.models.tokens import APIToken, ExportFetch
from questions.models.webhooks import Webhook, WebhookAttempt, WebhookDelivery

__all__ = [
    "APIToken",
    "AppendOnly",
    "AuditEntry",
    "BatchItem",
    "BatchRun",
    "CallHold",
    "Decision",
    "DecisionAnswer",
    "ExportFetch",
    "IngestDay",
    "IngestSettings",
    "Label",
    "LabelMove",
    "LabelQueue",
    "LabelQueueEntry",
    "LabelReservation",
    "LabelSettlement",
    "LintAcceptance",
    "Membership",
    "QuestionSet",
    "ReviewEvent",
    "RunMove",
    "RunPairing",
    "RunReport",
    "SampleState",
    "SampleStateRevision",
    "StateLabel",
    "Suggestion",
    "Team",
    "Version",
    "VersionQuerySet",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "WorkerHeartbeat",
]
