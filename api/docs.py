"""The API's docs page for people: the OpenAPI document rendered on the server.

Ninja's own page loads Swagger UI from a CDN, which neither a machine without
internet nor the site's Content-Security-Policy (no outside or inline script)
allows. This page is plain HTML from a template, built from the same document
/api/v1/openapi.json serves.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape, linebreaks
from django.utils.safestring import SafeString, mark_safe
from ninja.openapi.docs import DocsBase

if TYPE_CHECKING:
    from ninja import NinjaAPI

SCHEMA_REF = "#/components/schemas/"
CODE_SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Shown:
    """A schema as the page shows it: a link to a named one, or the JSON of one written in place."""

    name: str = ""
    text: str = ""


def shown(schema: Any) -> Shown:
    if isinstance(schema, dict) and set(schema) == {"$ref"}:
        return Shown(name=str(schema["$ref"]).removeprefix(SCHEMA_REF))
    return Shown(text=_pretty(schema))


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    description: SafeString
    secured: bool
    parameters: list[dict[str, Any]]
    body: list[tuple[str, Shown]]  # (content type, schema)
    responses: list[tuple[str, str, Shown]]  # (status, description, schema)
    schemas: list[str]  # the component schemas it refers to

    @property
    def anchor(self) -> str:
        return f"{self.method}-{self.path}".replace("/", "-").replace("{", "").replace("}", "").strip("-")


class ServerSideDocs(DocsBase):
    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        document = api.get_openapi_schema(path_params=kwargs)
        operations = [
            _operation(method, path, details)
            for path, methods in document["paths"].items()
            for method, details in methods.items()
        ]
        context = {
            "info": document["info"],
            "openapi_url": self.get_openapi_url(api, kwargs),
            "operations": operations,
            "schemas": [(name, _pretty(schema)) for name, schema in sorted(document["components"]["schemas"].items())],
        }
        return render(request, "api/docs.html", context)


def _operation(method: str, path: str, details: dict[str, Any]) -> Operation:
    body = details.get("requestBody", {}).get("content", {})
    return Operation(
        method=method.upper(),
        path=path,
        summary=details.get("summary", ""),
        description=prose(details.get("description", "")),
        secured=bool(details.get("security")),
        parameters=[
            {**parameter, "type": _type_of(parameter.get("schema", {}))} for parameter in details.get("parameters", [])
        ],
        body=[(content_type, shown(media.get("schema"))) for content_type, media in body.items()],
        responses=[
            (status, response.get("description", ""), shown(_schema_of(response)))
            for status, response in sorted(details.get("responses", {}).items())
        ],
        schemas=sorted(_references(details)),
    )


def prose(markdown: str) -> SafeString:
    """An OpenAPI description (CommonMark) as HTML paragraphs; of its markup only `code` spans are used here."""
    return mark_safe(CODE_SPAN.sub(r"<code>\1</code>", linebreaks(escape(markdown))))  # escaped first


def _schema_of(response: dict[str, Any]) -> Any:
    for media in response.get("content", {}).values():
        return media.get("schema")
    return None


def _type_of(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    kinds = [str(option.get("type")) for option in schema.get("anyOf", []) if option.get("type") != "null"]
    return " or ".join(kinds)


def _references(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"].removeprefix(SCHEMA_REF)} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_references(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_references(item) for item in value))
    return set()


def _pretty(schema: Any) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) if schema else ""
