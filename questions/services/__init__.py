"""Every write and every live ask: one function per state change,
keyword-only, atomic, a module per domain. Each checks who may act (`questions.roles`) before it
changes anything or spends a provider call, and refuses with an error that carries its HTTP
status and a code (`errors`).

    versions   sets and versions: create, draft, save, submit, discard, import
    states     sample states and their history
    decisions  ask a backend; record every call that went out
    reviews    approve, request changes, comment; labels and their moves
    lints      lint findings accepted with a reason
    tokens     the application's API tokens, their scopes and sets
    ingest     production states: a set's ingest settings, and taking a request of states
    retention  production states deleted after a set's retention, unless labelled
    fetches    who fetched what: the export fetch log, counted per token, label and minute
    webhooks   change webhooks: endpoints per set, events, delivery by the task worker
    teams      teams, their members and roles, a set moved between teams
    batches    batch runs: create, re-run the failed states, cancel, execute (the task), take over
"""

from questions.services.batch_execution import batch_execute, batch_run_task
from questions.services.batches import (
    batch_cancel,
    batch_create,
    batch_rerun_failed,
    batch_resume_if_stale,
    batch_sweep_stale,
)
from questions.services.decisions import LIVE_ASKERS_ONLY, decision_ask, decision_record
from questions.services.errors import (
    Conflict,
    Invalid,
    NotAllowed,
    NotConfigured,
    NotFound,
    Refusal,
    ServiceError,
)
from questions.services.fetches import (
    export_fetch_record,
    export_fetches_flush,
    export_fetches_forget,
)
from questions.services.ingest import ingest_configure, states_ingest
from questions.services.labels import (
    dispute_settle,
    labelling_configure,
    reserve,
    state_label,
    state_label_undo,
)
from questions.services.lints import NoSuchFinding, lint_accept
from questions.services.retention import production_purge, production_purge_due
from questions.services.reviews import (
    WeakEvidence,
    label_move,
    pin_check,
    version_approve,
    version_comment,
    version_request_changes,
    weak_evidence,
    wrote,
)
from questions.services.states import (
    StatesImported,
    sample_state_create,
    sample_state_delete,
    sample_state_duplicate,
    sample_state_update,
    sample_states_import,
)
from questions.services.summaries import store_summary as run_summary_store
from questions.services.teams import (
    member_remove,
    member_set,
    set_move,
    team_create,
    team_default,
    team_named,
)
from questions.services.tokens import (
    api_token_authenticate,
    api_token_create,
    api_token_permit,
    api_token_revoke,
)
from questions.services.versions import (
    DraftExists,
    InvalidContent,
    NotADraft,
    StaleRevision,
    document_text,
    open_draft,
    question_set_create,
    question_set_start,
    version_create,
    version_discard,
    version_draft_from,
    version_import,
    version_keep,
    version_save,
    version_set_advice,
    version_submit,
)
from questions.services.webhooks import (
    webhook_create,
    webhook_delete,
    webhook_deliver,
    webhook_deliver_task,
    webhook_event,
    webhook_send_test,
    webhook_sweep_overdue,
)

__all__ = [
    "LIVE_ASKERS_ONLY",
    "Conflict",
    "DraftExists",
    "Invalid",
    "InvalidContent",
    "NoSuchFinding",
    "NotADraft",
    "NotAllowed",
    "NotConfigured",
    "NotFound",
    "Refusal",
    "ServiceError",
    "StaleRevision",
    "StatesImported",
    "WeakEvidence",
    "api_token_authenticate",
    "api_token_create",
    "api_token_permit",
    "api_token_revoke",
    "batch_cancel",
    "batch_create",
    "batch_execute",
    "batch_rerun_failed",
    "batch_resume_if_stale",
    "batch_run_task",
    "batch_sweep_stale",
    "decision_ask",
    "decision_record",
    "dispute_settle",
    "document_text",
    "export_fetch_record",
    "export_fetches_flush",
    "export_fetches_forget",
    "ingest_configure",
    "label_move",
    "labelling_configure",
    "lint_accept",
    "member_remove",
    "member_set",
    "open_draft",
    "pin_check",
    "production_purge",
    "production_purge_due",
    "question_set_create",
    "question_set_start",
    "reserve",
    "run_summary_store",
    "sample_state_create",
    "sample_state_delete",
    "sample_state_duplicate",
    "sample_state_update",
    "sample_states_import",
    "set_move",
    "state_label",
    "state_label_undo",
    "states_ingest",
    "team_create",
    "team_default",
    "team_named",
    "version_approve",
    "version_comment",
    "version_create",
    "version_discard",
    "version_draft_from",
    "version_import",
    "version_keep",
    "version_request_changes",
    "version_save",
    "version_set_advice",
    "version_submit",
    "weak_evidence",
    "webhook_create",
    "webhook_delete",
    "webhook_deliver",
    "webhook_deliver_task",
    "webhook_event",
    "webhook_send_test",
    "webhook_sweep_overdue",
    "wrote",
]
