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

# Under /api/ an error is the API's problem details, whichever layer raised it (api/problems.py); elsewhere the
# site's pages, as Django's defaults render them.
handler400 = "api.problems.bad_request"
handler403 = "api.problems.permission_denied"
handler404 = "api.problems.page_not_found"
handler500 = "api.problems.server_error"
