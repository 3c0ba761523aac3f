from __future__ import annotations

from django.urls import path

from attestations import views

app_name = "attestations"

urlpatterns = [
    path("runs/<str:run_id>/notes", views.add_note, name="add_note"),
    path("runs/<str:run_id>/report", views.report_issue, name="report_issue"),
]
