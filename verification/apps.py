from __future__ import annotations

from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "verification"
    verbose_name = "Verification"

    def ready(self) -> None:
        # runs never imports this app: its run page and twin draw verification's section, and its dumps carry
        # verification's sections, through runs' registries (runs/extensions.py, runs/dump_sections.py).
        from runs.dump_sections import register_section
        from runs.extensions import register_run_section, register_top_run_note
        from runs.ingest import versions_added

        # Disputes listen for new reports (attestations) and for reruns that end (verification.reruns).
        from verification import disputes  # noqa: F401
        from verification.dump_sections import SECTIONS
        from verification.pages import RUN_SECTION
        from verification.quorum import top_run_note
        from verification.reruns import refresh_evidence_of_new_versions

        register_run_section(RUN_SECTION)
        register_top_run_note("quorum", top_run_note)
        # A run's new version holds figures no rerun of an earlier one checked.
        versions_added.connect(refresh_evidence_of_new_versions, dispatch_uid="verification-new-versions")
        for section in SECTIONS:
            register_section(section)
