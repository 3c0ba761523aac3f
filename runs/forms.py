from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import RegexValidator

from records.identity import RUN_ID_LENGTH, RUN_ID_PATTERN
from records.sources import SOURCES
from runs.display import hardware_label
from runs.models import ComparisonGroup, Run, RunQuerySet

# The longest product a run can name, and so the longest the API's hardware filter takes.
HARDWARE_MAX_LENGTH = Run._meta.get_field("hardware").max_length


def hardware_choices() -> list[tuple[str, str]]:
    """The hardware that has runs, labelled as the lists label it; read from the few group rows, not the run table."""
    products = ComparisonGroup.objects.order_by("hardware").values_list("hardware", flat=True).distinct()
    return [("", "any hardware"), *((product, hardware_label(product)) for product in products)]


class RunSearchForm(forms.Form):
    """Home page search and filters. Unknown values are reported, never a server error."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "definition, implementation, project or id"}),
    )
    source = forms.ChoiceField(
        required=False, choices=[("", "any source"), *((key, info.title) for key, info in SOURCES.items())]
    )
    gpu = forms.ChoiceField(label="Hardware", required=False)
    evidence = forms.ChoiceField(required=False, choices=[("", "any evidence"), *Run.Evidence.choices])

    def __init__(self, *args: Any, any_hardware: bool = False, **kwargs: Any) -> None:
        """`any_hardware`: the API's filter, which takes any product (one without runs lists none), so that
        what it accepts does not change with the data; the page's select offers the hardware that has runs."""
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        if any_hardware:
            self.fields["gpu"] = forms.CharField(required=False, max_length=HARDWARE_MAX_LENGTH)
            return
        gpu = self.fields["gpu"]
        assert isinstance(gpu, forms.ChoiceField)
        gpu.choices = hardware_choices()

    def filter(self, runs: RunQuerySet) -> RunQuerySet:
        """Apply every valid field but the query, which runs.search matches in parts; Django drops invalid
        fields from cleaned_data, and the page shows them."""
        data = self.cleaned_data if self.is_bound else {}
        if source := data.get("source"):
            runs = runs.filter(source=source)
        if gpu := data.get("gpu"):
            runs = runs.filter(hardware=gpu)
        if evidence := data.get("evidence"):
            runs = runs.filter(evidence=evidence)
        return runs

    @property
    def is_filtered(self) -> bool:
        return self.is_bound and any(self.cleaned_data.get(name) for name in self.fields)


class RunIdField(forms.CharField):
    """A run id as a person pastes it, spaces around it or in capitals; anything else (`x/y`, `..`) is an error
    on the form, never an address to redirect to."""

    default_validators = [
        RegexValidator(
            f"^{RUN_ID_PATTERN.pattern}$",
            f"A run id is {RUN_ID_LENGTH} hexadecimal digits, as in a run page's address: /runs/<id>.",
        )
    ]

    def to_python(self, value: Any) -> str:
        return str(super().to_python(value)).lower()


class CompareForm(forms.Form):
    a = RunIdField(label="Run", max_length=64)
    b = RunIdField(label="Compare with", max_length=64)
