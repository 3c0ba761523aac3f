"""The verification domain's URLs. They keep the paths and names they had among runs' (runs:verification,
runs:reruns, ...): kernelindex/urls.py serves them under runs' namespace, after runs' own patterns."""

from __future__ import annotations

from django.urls import path, re_path

from verification import dispute_views, feeds, views

urlpatterns = [
    path("runs/<str:run_id>/reruns", views.run_reruns, name="reruns"),
    path("runs/<str:run_id>/rerun", views.request_rerun_view, name="request_rerun"),
    path("verification.json", views.verification_json, name="verification_json"),
    path("verification", views.verification_page, name="verification"),
    path("reruns/feed.atom", feeds.rerun_feed, name="rerun_feed"),
    path("disputes.json", dispute_views.disputes_json, name="disputes_json"),
    path("disputes", dispute_views.disputes_page, name="disputes"),
    path("disputes/feed/", dispute_views.disputes_feed, name="disputes_feed"),
    path("harness.json", views.harness_versions_json, name="harness_versions_json"),
    path("harness", views.harness_versions_page, name="harness_versions"),
    # A version is named by its digest's 64 hex digits (harness.harness_digest): nothing else reaches the view.
    re_path(r"^harness/(?P<hex_digest>[0-9a-f]{64})\.json$", views.harness_version_json, name="harness_version_json"),
    re_path(r"^harness/(?P<hex_digest>[0-9a-f]{64})$", views.harness_version_page, name="harness_version"),
    path("reruns/<int:rerun_id>/attestation.json", views.rerun_attestation, name="rerun_attestation"),
]
