"""The two public forms on a run page: add a reproduction or note, report an issue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms

from attestations.models import Attestation, IssueReport

# Django's classes take no type parameters at run time; django-stubs' do.
if TYPE_CHECKING:
    AttestationModelForm = forms.ModelForm[Attestation]
    IssueReportModelForm = forms.ModelForm[IssueReport]
else:
    AttestationModelForm = IssueReportModelForm = forms.ModelForm

NANOSECONDS_PER_UNIT = {"ns": 1.0, "us": 1_000.0, "ms": 1_000_000.0}
LATENCY_UNITS = [("ns", "ns"), ("us", "µs"), ("ms", "ms")]
# Anything slower is a typo or a different benchmark; it also keeps the float finite.
MAX_LATENCY_NS = 3_600 * 1e9

NOTE_PREFIX = "note"
REPORT_PREFIX = "report"


def honeypot_field() -> forms.CharField:
    """A field people never see (CSS moves it off screen) and form-filling bots do."""
    return forms.CharField(
        required=False,
        label="Leave this field empty",
        widget=forms.TextInput(attrs={"tabindex": "-1", "autocomplete": "off"}),
    )


class NoteForm(AttestationModelForm):
    kind = forms.ChoiceField(
        choices=Attestation.Kind.choices, initial=Attestation.Kind.REPRODUCTION, widget=forms.RadioSelect
    )
    outcome = forms.ChoiceField(
        choices=[("", "—"), *Attestation.Outcome.choices], required=False, label="Outcome (reproductions only)"
    )
    latency_value = forms.FloatField(
        required=False,
        label="Measured latency",
        widget=forms.NumberInput(attrs={"step": "any", "inputmode": "decimal"}),
    )
    latency_unit = forms.ChoiceField(choices=LATENCY_UNITS, initial="us", required=False, label="Unit")
    website = honeypot_field()

    class Meta:
        model = Attestation
        fields = ["kind", "outcome", "gpu", "body", "author_name", "contact_email"]
        labels = {
            "body": "What you did and saw",
            "author_name": "Your name as shown (optional)",
            "contact_email": "Contact email (optional)",
        }
        help_texts = {"gpu": "As your driver names it, e.g. NVIDIA H100 80GB HBM3."}
        widgets = {"body": forms.Textarea(attrs={"rows": 5})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", NOTE_PREFIX)
        super().__init__(*args, **kwargs)

    def clean_latency_value(self) -> float | None:
        value: float | None = self.cleaned_data.get("latency_value")
        if value is not None and value <= 0:
            raise forms.ValidationError("Enter a latency greater than zero.")
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("kind") == Attestation.Kind.REPRODUCTION:
            if not cleaned.get("outcome"):
                self.add_error("outcome", "Say how the reproduction came out.")
            if not cleaned.get("gpu"):
                self.add_error("gpu", "Name the GPU you ran it on.")
        elif cleaned.get("kind") == Attestation.Kind.NOTE:
            if cleaned.get("outcome"):
                self.add_error("outcome", "Only a reproduction has an outcome; leave it empty for a note.")
            if not cleaned.get("body"):
                self.add_error("body", "Write the note.")
        self._clean_latency(cleaned)
        return cleaned

    def _clean_latency(self, cleaned: dict[str, Any]) -> None:
        """People type a number and a unit; the row keeps nanoseconds, like every latency in the index."""
        value, unit = cleaned.get("latency_value"), cleaned.get("latency_unit")
        self.instance.measured_latency_ns = None
        if value is None:
            return
        if not unit:
            self.add_error("latency_unit", "Choose ns, µs or ms.")
            return
        nanoseconds = value * NANOSECONDS_PER_UNIT[unit]
        if nanoseconds > MAX_LATENCY_NS:
            self.add_error("latency_value", "Enter a latency under one hour.")
        self.instance.measured_latency_ns = nanoseconds


class ReportForm(IssueReportModelForm):
    category = forms.ChoiceField(choices=[("", "Choose one"), *IssueReport.Category.choices], label="What is wrong")
    website = honeypot_field()

    class Meta:
        model = IssueReport
        fields = ["category", "body", "contact"]
        labels = {"body": "Details", "contact": "Contact (optional)"}
        help_texts = {"contact": "An email or handle, for moderators only; never shown publicly."}
        widgets = {"body": forms.Textarea(attrs={"rows": 5})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", REPORT_PREFIX)
        super().__init__(*args, **kwargs)


def filled_honeypot(form: NoteForm | ReportForm) -> bool:
    return bool(form.cleaned_data.get("website"))
