"""Django `Form`s for the flat POSTs (run start, label move, control and drift start, a new
webhook, a sample state's fields): each reads the
request into plain values, and a value that does not read is an error with a code. The rules of
a step (a label name's pattern, the bounds of a run, who may) stay in its service; a form says
only that a field is missing or not a number. The editor's cards are bespoke (`forms.py`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import ProhibitNullCharactersValidator

from questions.core import redaction
from questions.core.numbers import whole_number
from questions.engine.backends import DEFAULT as DEFAULT_BACKEND
from questions.models import BatchRun


class WholeNumberField(forms.Field):
    """A whole number in ASCII digits (`numbers.whole_number`): `"²"` or `"٣"`, which Django's
    `IntegerField` would read through `int()`, is `not_a_whole_number` here."""

    def __init__(self, *, digits: int = 18, what: str = "This", **kwargs: Any):
        self.digits, self.what = digits, what
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> int | None:
        raw = (value or "").strip() if isinstance(value, str) else value
        if raw in ("", None):
            return None
        number = whole_number(raw, digits=self.digits) if isinstance(raw, str) else None
        if number is None:
            raise forms.ValidationError(
                f"{self.what} is a whole number in digits, not {str(raw)[:20]!r}.",
                code="not_a_whole_number",
            )
        return number


class TextField(forms.CharField):
    """Text handed to the service as it came: its rules (a NUL, a length, a pattern) are the
    service's, which names the field in its refusal, not Django's generic words."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]


def first_error(form: forms.Form) -> str:
    """The first of a form's errors, as a page shows it beside the form."""
    for errors in form.errors.values():
        return errors[0]
    return ""


class RunStartForm(forms.Form):
    backend = TextField(required=False, empty_value=DEFAULT_BACKEND)
    concurrency = WholeNumberField(digits=6, what="Concurrency", required=False)
    threshold = forms.FloatField(
        required=False, error_messages={"invalid": "The threshold is a number from 0 to 1."}
    )
    tag = TextField(required=False)

    def clean_concurrency(self) -> int:
        value = self.cleaned_data["concurrency"]
        return BatchRun.DEFAULT_CONCURRENCY if value is None else value

    def clean_threshold(self) -> float:
        value = self.cleaned_data["threshold"]
        return BatchRun.DEFAULT_THRESHOLD if value is None else value


class LabelMoveForm(forms.Form):
    name = TextField(error_messages={"required": "Name the label."})
    version = WholeNumberField(
        digits=9, what="The version", error_messages={"required": "Pick a version."}
    )
    note = TextField(required=False, strip=False)


class ControlStartForm(forms.Form):
    version = WholeNumberField(
        digits=9,
        what="The version",
        error_messages={"required": "Pick a version of the set to ask."},
    )
    kind = TextField(required=False)
    count = WholeNumberField(
        digits=9,
        what="The number of shuffles, orders or calls",
        error_messages={"required": "Say how many shuffles, orders or calls."},
    )
    seed = WholeNumberField(digits=10, what="The seed", required=False)
    backend = TextField(required=False)

    def clean_seed(self) -> int:
        value = self.cleaned_data["seed"]
        return 0 if value is None else value


class DriftStartForm(forms.Form):
    label = TextField(error_messages={"required": "Pick a label and name the model to ask."})
    model = TextField(error_messages={"required": "Pick a label and name the model to ask."})
    backend = TextField(required=False, empty_value=None)


class WebhookForm(forms.Form):
    url = TextField(error_messages={"required": "Give the receiver's URL (http or https)."})
    description = TextField(required=False, strip=False)


class SampleStateForm(forms.Form):
    """A sample state's flat fields. The state's JSON is read by the same check that shows its
    size as the author types (`views.states`), and the expected answers by the questions they
    answer; the name's and the tags' rules are the service's."""

    name = TextField(required=False, strip=False)
    tags = TextField(required=False)
    base_revision = WholeNumberField(digits=9, what="The revision", required=False)

    def clean_tags(self) -> list[str]:
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]

    def clean_base_revision(self) -> int:
        value = self.cleaned_data["base_revision"]
        return 0 if value is None else value


class LabelPlaceForm(forms.Form):
    """Where a labeller is on the labelling page: the version labelled for and the states
    skipped (the page's address carries them from step to step)."""

    version = WholeNumberField(digits=9, what="The version", required=False)
    skipped = TextField(required=False)


class StateLabelForm(LabelPlaceForm):
    """One labelling step: this labeller's answer to one question of one state. Which answers
    a question takes, and who may give one, are the service's (`services.labels.state_label`)."""

    question = TextField(required=False)
    answer = TextField(required=False)


class IngestSettingsForm(forms.Form):
    """How a set takes production states, as the production page's form sends it: sampling,
    retention, the daily quota, and redaction (paths to drop and patterns to mask, one a line;
    the built-ins ticked). Their bounds and whether a rule can work are the service's
    (`services.ingest.ingest_configure`)."""

    keep_one_in = WholeNumberField(digits=9, what="Keep 1 in N")
    retention_days = WholeNumberField(digits=9, what="The retention")
    daily_quota = WholeNumberField(digits=12, what="The daily quota")
    drop = TextField(required=False)
    mask = TextField(required=False)
    builtins = forms.MultipleChoiceField(
        required=False, choices=[(b, b) for b in redaction.BUILTINS]
    )

    @staticmethod
    def _lines(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip()]

    def clean_drop(self) -> list[str]:
        return self._lines(self.cleaned_data["drop"])

    def clean_mask(self) -> list[str]:
        # a pattern's own spaces count: only the line's end is dropped
        return [line.rstrip("\r") for line in self.cleaned_data["mask"].split("\n") if line.strip()]


class LabellingSettingsForm(forms.Form):
    """How a set is labelled: how many labels a state needs and whether labellers see the
    model's answer before theirs. Which numbers it takes, and who may change it, are the
    service's (`services.labels.labelling_configure`)."""

    needed = WholeNumberField(digits=2, what="The number of labels a state needs")
    show_model = forms.BooleanField(required=False)


class DisputeSettleForm(forms.Form):
    """A reviewer's word on one disputed question of a state: the answer that settles it (the
    form value of one of its choices) or `ambiguous`. Which answers it takes, and who may say,
    are the service's (`services.labels.dispute_settle`)."""

    question = TextField(error_messages={"required": "Say which question you settle."})
    answer = TextField(required=False)
    ambiguous = forms.BooleanField(required=False)


class AttributionForm(forms.Form):
    """Which words decide: a state by name, a question (blank: every question), a backend."""

    state = TextField(required=False)  # the service names a missing one, after who may ask
    question = TextField(required=False, empty_value=None)
    backend = TextField(required=False, empty_value="typesafe")
    into = TextField(required=False, empty_value="attribution")


class MemberForm(forms.Form):
    """A team's member given a role (`remove`: taken out of the team)."""

    username = TextField(max_length=150)
    role = TextField(required=False)
    remove = forms.BooleanField(required=False)


class SuggestForm(forms.Form):
    """Suggest rewordings: a question, the live backend that attributes and proves (blank:
    the run's), how many candidates, the call limit; the service says what is out of range."""

    question = TextField(required=False)
    backend = TextField(required=False)
    candidates = WholeNumberField(digits=3, what="The number of candidates", required=False)
    max_calls = WholeNumberField(digits=6, what="The call limit", required=False)
    into = TextField(required=False, empty_value="suggest")


class SuggestionApplyForm(forms.Form):
    """ "Use this": the candidate's number."""

    candidate = WholeNumberField(
        digits=3, what="The candidate", error_messages={"required": "Pick a candidate."}
    )
