from __future__ import annotations

from typing import Any

from django import forms

from records.hardware import CLASSES, UnknownHardwareClassError, hardware_class_named
from runs.display import hardware_class_label


def hardware_class_choices() -> list[tuple[str, str]]:
    """Every registered hardware class (records.hardware), after the empty choice: the run's own."""
    return [("", "the run's own class"), *((name, hardware_class_label(name)) for name in CLASSES)]


class RegistryChoiceField(forms.ChoiceField):
    """A select of hardware classes whose refusal the registry words (naming every class), not Django."""

    def valid_value(self, value: Any) -> bool:
        return True


class RerunForm(forms.Form):
    """A moderator's rerun request from the run page."""

    reason = forms.CharField(label="Why", required=False, max_length=500)
    hardware = RegistryChoiceField(
        label="Hardware class",
        required=False,
        choices=hardware_class_choices,
        help_text="Empty: the run's own class, the only one whose rerun can change its evidence level.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def clean_hardware(self) -> str:
        """A registered class, or empty for the run's own; a request for any other would wait forever."""
        name = str(self.cleaned_data["hardware"]).strip()
        if not name:
            return ""
        try:
            return hardware_class_named(name).name
        except UnknownHardwareClassError as unknown:
            raise forms.ValidationError(str(unknown)) from None
