from __future__ import annotations

from django.urls import path, re_path

from runs import feeds, views

# The verification pages are served under this namespace too, with the names they had here
# (kernelindex/urls.py adds verification/urls.py's patterns to these).
app_name = "runs"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("index.json", views.home_json, name="home_json"),
    path("runs/<str:run_id>.json", views.run_json, name="detail_json"),
    path("runs/<str:run_id>", views.run_detail, name="detail"),
    path("runs/<str:run_id>/badge.svg", views.run_badge, name="badge"),
    path("runs/<str:run_id>/manifest", views.run_manifest, name="manifest"),
    path("runs/<str:run_id>/history.json", views.run_history_json, name="history_json"),
    path("runs/<str:run_id>/history", views.run_history, name="history"),
    path("documents/<str:digest>.json", views.document_json, name="document"),
    path("dumps/", views.dump_list, name="dumps"),
    path("dumps/<str:name>/<str:file>", views.dump_file, name="dump_file"),
    path("groups/<str:key>/feed.atom", feeds.group_feed, name="group_feed"),
    path("groups/<str:key>.json", views.group_json, name="group_json"),
    path("groups/<str:key>", views.group_detail, name="group"),
    # Definition names may hold slashes (KernelBench's "level1/1_Square_matrix_multiplication_.py").
    # Before the definition page, which would take "<name>/feed.atom" for a name.
    re_path(r"^definitions/(?P<source>[^/]+)/(?P<name>.+)/feed\.atom$", feeds.definition_feed, name="definition_feed"),
    re_path(r"^definitions/(?P<source>[^/]+)/(?P<name>.+)\.json$", views.definition_json, name="definition_json"),
    re_path(r"^definitions/(?P<source>[^/]+)/(?P<name>.+)$", views.definition_detail, name="definition"),
    path("sources/<str:key>/feed.atom", feeds.source_feed, name="source_feed"),
    path("sources/<str:key>.json", views.source_json, name="source_json"),
    path("sources/<str:key>", views.source_detail, name="source"),
    path("compare", views.compare_form, name="compare_form"),
    path("compare/<str:a>/<str:b>.json", views.compare_json, name="compare_json"),
    path("compare/<str:a>/<str:b>", views.compare, name="compare"),
]
