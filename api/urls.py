from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from api.endpoints import api
from api.problems import problem_response

View = Callable[..., HttpResponse]


def answering_head(view: View) -> View:
    """HEAD answered as GET, as the site's own views answer it (web.middleware.HeadWithoutBodyMiddleware drops
    the body); ninja would answer 405."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "HEAD":
            return view(request, *args, **kwargs)
        request.method = "GET"
        try:
            return view(request, *args, **kwargs)
        finally:
            request.method = "HEAD"

    return wrapper


def docs(request: HttpRequest) -> HttpResponse:
    """The API's root is its docs page."""
    return api.docs.render_page(request, api)


@csrf_exempt  # the API reads no cookies: an unknown address is a 404 whatever the method
def unknown(request: HttpRequest, rest: str) -> HttpResponse:
    """Any other address under the API answers in the API's error shape too."""
    return problem_response(request, 404, f"no such API address: {request.path}")


def _with_head(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = answering_head(pattern.callback)
    return patterns


# Not `app_name`, which would namespace this whole module as ninja's app.
ninja_patterns, ninja_app, ninja_namespace = api.urls
urlpatterns = [
    path("", csrf_exempt(require_safe(docs))),
    path("", (_with_head(ninja_patterns), ninja_app, ninja_namespace)),
    re_path(r"^(?P<rest>.*)$", unknown),
]
