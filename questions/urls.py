from django.urls import path

from questions.views import (
    advice,
    check,
    compare,
    controls,
    editor,
    preview,
    review,
    runs,
    sets,
    states,
    tries,
    webhooks,
)

urlpatterns = [
    path("", sets.set_list, name="set-list"),
    path("check/", check.document_check, name="document-check"),
    path("reviews/", review.review_queue, name="review-queue"),
    path("runs/<int:pk>/", runs.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", runs.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/try/", tries.try_progress, name="try-progress"),
    path("runs/<int:pk>/try/cancel/", tries.try_cancel, name="try-cancel"),
    path("sets/<slug:slug>/v<int:number>/try/", tries.try_start, name="try-start"),
    path("sets/<slug:slug>/v<int:number>/try/plan/", tries.try_plan, name="try-plan"),
    path("runs/<int:pk>/rerun-failed/", runs.run_rerun_failed, name="run-rerun-failed"),
    path("sets/<slug:slug>/v<int:number>/runs/", runs.run_create, name="run-create"),
    path("tokens/", review.token_list, name="token-list"),
    path("schemas/question-set-1.json", review.export_schema, name="export-schema"),
    path("api/sets/<slug:slug>/export.json", review.api_export, name="api-export"),
    path("sets/<slug:slug>/labels/", review.label_move, name="label-move"),
    path("sets/<slug:slug>/v<int:number>/review/", review.version_review, name="version-review"),
    path(
        "sets/<slug:slug>/v<int:number>/export.json", review.version_export, name="version-export"
    ),
    path("sets/new/", sets.set_create, name="set-create"),
    path("sets/<slug:slug>/", sets.set_detail, name="set-detail"),
    path("sets/<slug:slug>/history/", sets.set_history, name="set-history"),
    path("sets/<slug:slug>/diff/", sets.version_diff, name="version-diff"),
    path("sets/<slug:slug>/compare/", compare.set_compare, name="set-compare"),
    path("sets/<slug:slug>/controls/", controls.set_controls, name="set-controls"),
    path("sets/<slug:slug>/controls/start/", controls.control_start, name="control-start"),
    path("sets/<slug:slug>/drift/start/", controls.drift_start, name="drift-start"),
    path("sets/<slug:slug>/v<int:number>/", editor.version_edit, name="version-edit"),
    path("sets/<slug:slug>/v<int:number>/save/", editor.version_save, name="version-save"),
    path(
        "sets/<slug:slug>/v<int:number>/validate/", editor.version_validate, name="version-validate"
    ),
    path("sets/<slug:slug>/v<int:number>/card/", editor.version_card, name="version-card"),
    path(
        "sets/<slug:slug>/v<int:number>/card/open/",
        editor.version_card_open,
        name="version-card-open",
    ),
    path(
        "sets/<slug:slug>/v<int:number>/preview/", preview.version_preview, name="version-preview"
    ),
    path("sets/<slug:slug>/v<int:number>/json/", editor.version_json, name="version-json"),
    path("sets/<slug:slug>/v<int:number>/advice/", advice.version_advice, name="version-advice"),
    path(
        "sets/<slug:slug>/v<int:number>/new-draft/",
        sets.version_new_draft,
        name="version-new-draft",
    ),
    path("sets/<slug:slug>/v<int:number>/submit/", sets.version_submit, name="version-submit"),
    path("sets/<slug:slug>/v<int:number>/keep/", sets.version_keep, name="version-keep"),
    path("sets/<slug:slug>/v<int:number>/discard/", sets.version_discard, name="version-discard"),
    path("sets/<slug:slug>/states/new/", states.state_create, name="state-create"),
    path("sets/<slug:slug>/states/check/", states.state_check, name="state-check"),
    path("sets/<slug:slug>/states/<int:pk>/", states.state_edit, name="state-edit"),
    path(
        "sets/<slug:slug>/states/<int:pk>/duplicate/",
        states.state_duplicate,
        name="state-duplicate",
    ),
    path("sets/<slug:slug>/states/<int:pk>/delete/", states.state_delete, name="state-delete"),
    path("sets/<slug:slug>/states/<int:pk>/history/", states.state_history, name="state-history"),
    path("sets/<slug:slug>/webhooks/", webhooks.set_webhooks, name="set-webhooks"),
    path("sets/<slug:slug>/webhooks/<int:pk>/test/", webhooks.webhook_test, name="webhook-test"),
    path(
        "sets/<slug:slug>/webhooks/<int:pk>/delete/",
        webhooks.webhook_delete,
        name="webhook-delete",
    ),
]
