"""A set's agreement page: per question of the version its states are labelled for, how far the
labellers agree (κ or α with its interval and n), each labeller and the model against the
settled answers, and the states settled, disputed and ambiguous (`selectors.agreement` reads
it; this view lays it out)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import settling
from questions.post_forms import LabellingSettingsForm, first_error
from questions.selectors.agreement import kept_agreement
from questions.selectors.teams import visible_sets


@require_GET
def set_agreement(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    return render(
        request,
        "questions/set_agreement.html",
        {
            "set": question_set,
            "found": kept_agreement(question_set),
            "can_configure": roles.may_review(request.user, question_set),
            "needed_choices": range(settling.MIN_NEEDED, settling.MAX_NEEDED + 1),
        },
    )


@require_POST
def labelling_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """A reviewer sets how many labels a state needs and whether the model's answer shows
    first (`services.labels.labelling_configure` owns who may, and which numbers)."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    form = LabellingSettingsForm(request.POST)
    if not form.is_valid():
        raise services.Invalid(f"Nothing was changed: {first_error(form)}")
    services.labelling_configure(
        question_set=question_set,
        user=request.user,
        needed=form.cleaned_data["needed"],
        show_model=form.cleaned_data["show_model"],
    )
    blind = question_set.labels_needed > 1 and not question_set.labels_show_model
    messages.success(
        request,
        f"A state of {question_set.slug} needs {question_set.labels_needed} "
        f"label{'s' if question_set.labels_needed != 1 else ''} now"
        + ("; labellers label blind." if blind else "."),
    )
    return redirect("set-agreement", question_set.slug)
