from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from web.login import ThrottledAdminLoginForm

admin.site.login_form = ThrottledAdminLoginForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("runs.urls")),
    path("", include("attestations.urls")),
]
