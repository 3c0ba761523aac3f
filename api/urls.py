from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path
from django.views.generic import RedirectView

from api.endpoints import api


def unknown(request: HttpRequest, rest: str) -> JsonResponse:
    """Any other address under the API answers in JSON too."""
    return JsonResponse({"detail": f"no such API address: {request.path}"}, status=404)


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="api-v1:openapi-view"), name="api_root"),
    path("", api.urls),
    re_path(r"^(?P<rest>.*)$", unknown),
]
