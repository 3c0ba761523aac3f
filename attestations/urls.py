from __future__ import annotations

from django.urls import path

from attestations import dispute_views, views

app_name = "attestations"

urlpatterns = [
    path("runs/<str:run_id>/notes", views.add_note, name="add_note"),
    path("runs/<str:run_id>/report", views.report_issue, name="report_issue"),
    path("disputes.json", dispute_views.disputes_json, name="disputes_json"),
    path("disputes", dispute_views.disputes_page, name="disputes"),
    path("disputes/feed/", dispute_views.disputes_feed, name="disputes_feed"),
]
