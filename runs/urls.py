from __future__ import annotations

from django.urls import path

from runs import views

app_name = "runs"

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/<str:run_id>", views.run_detail, name="detail"),
    path("definitions/<str:source>/<path:name>", views.definition_detail, name="definition"),
    path("groups/<str:key>", views.group_detail, name="group"),
]
