from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from web.login import ThrottledAdminLoginForm

admin.site.login_form = ThrottledAdminLoginForm
admin.site.site_header = "KernelIndex moderation"
admin.site.site_title = "KernelIndex moderation"
# The change lists need the page's width for their columns; the breadcrumbs and the index still navigate.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("", include("runs.urls")),
    path("", include("attestations.urls")),
]
