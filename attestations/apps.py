from __future__ import annotations

from django.apps import AppConfig


class AttestationsConfig(AppConfig):
    name = "attestations"
    verbose_name = "Attestations and issue reports"

    def ready(self) -> None:
        # Notes and reports go into dumps through runs' registry of sections: runs never imports attestations.
        from attestations.dump_sections import SECTIONS
        from runs.dump_sections import register_section

        for section in SECTIONS:
            register_section(section)
