from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from runs import urls as runs_urls
from verification import urls as verification_urls
from web.login import ThrottledAdminLoginForm

admin.site.login_form = ThrottledAdminLoginForm
admin.site.site_header = "KernelIndex moderation"
admin.site.site_title = "KernelIndex moderation"
# The change lists need the page's width for their columns; the breadcrumbs and the index still navigate.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    # verification's pages keep the names they had among runs' ("runs:verification"), and runs imports nothing
    # of verification: the two lists are joined here, under runs' namespace.
    path("", include((runs_urls.urlpatterns + verification_urls.urlpatterns, runs_urls.app_name))),
    path("", include("attestations.urls")),
]
