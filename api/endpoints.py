"""The API under /api/v1/: submissions with a bearer token, and reads built as the pages' `.json` twins build theirs.

Every read reuses a twin's builder (runs/serializers.py) on the page's own
context (runs/pages.py), so the API and the twins cannot disagree; the list of
runs adds keyset pagination to the home page's filters (runs/forms.py).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

from django import forms
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from ninja import NinjaAPI, Router, Status
from ninja.errors import AuthenticationError, ValidationError
from ninja.params import functions as param
from ninja.security import HttpBearer

from api import schemas
from api.docs import ServerSideDocs
from api.models import ApiToken, authenticate_token
from api.problems import SubmissionProblem, declare_problems, problem_response, problems
from api.schemas import DIGEST, PROBLEM_REF, EvidenceLevel, SourceName, follow
from api.submissions import (
    ACCEPTED_TYPES,
    MAX_BODY_BYTES,
    MAX_RUNS,
    OutOfScopeError,
    SubmissionRefusedError,
    refusal,
    submit,
)
from records.attestation import key_id
from records.errors import RecordError
from records.identity import RUN_ID_PATTERN
from runs import pages, serializers
from runs.forms import HARDWARE_MAX_LENGTH, RunSearchForm
from runs.models import Definition
from runs.selectors import (
    document_value,
    get_definition_or_404,
    get_group_or_404,
    get_run_or_404,
    run_documents,
    run_hardware_class,
    run_manifest_text,
)
from verification.models import RerunRequest, WorkerKey
from verification.selectors import rerun_row
from verification.serializers import rerun_json, worker_key_json
from verification.worker_keys import site_public_key
from web import ratelimit

RATE_WINDOW_SECONDS = 3600
# The most runs one page of the list may hold.
MAX_LIMIT = 500
# The forms of the parameters, read where the server enforces them.
QUERY_MAX_LENGTH = cast(int, cast(forms.CharField, RunSearchForm.base_fields["q"]).max_length)
DEFINITION_NAME_MAX_LENGTH = cast(int, Definition._meta.get_field("name").max_length)
# Primary keys are 64-bit.
MAX_ID = 2**63 - 1


def linked(*statuses: int, **links: dict[str, Any]) -> dict[str, Any]:
    """An operation's `openapi_extra` that says where its answers lead (OpenAPI links, made by schemas.follow)."""
    return {"responses": {status: {"links": links} for status in statuses}}


class KernelIndexApi(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: Any = None) -> Any:
        """Ninja's document, plus the manifest's schemas (the request body of a submission is read by the importer,
        not by ninja, so ninja cannot know them), the error answers as problem details (api/problems.py), and the
        parameters as the server checks them."""
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        components = schema["components"]["schemas"]
        schemas.point_at_manifests(components)
        components.update(schemas.manifest_schemas())
        declare_problems(schema, PROBLEM_REF)
        schemas.declare_parameters(schema)
        return schema


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return authenticate_token(token)


api = KernelIndexApi(
    title="KernelIndex API",
    version="1",
    description="Submit native manifests with a bearer token, and read runs, comparison groups, definitions and "
    "reruns as the site's pages show them.",
    urls_namespace="api-v1",
    docs=ServerSideDocs(),
    docs_url="/docs",
    # Bodies are spelled as the twins spell them (camelCase, the models' aliases).
    default_router=Router(by_alias=True),
)


@api.exception_handler(AuthenticationError)
def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    presented = bool(request.headers.get("Authorization"))
    detail = "unknown or revoked token" if presented else "send Authorization: Bearer <token>"
    response = problem_response(request, 401, detail, "Authorization")
    # RFC 6750: the scheme, and what was wrong with a token that was sent.
    response["WWW-Authenticate"] = 'Bearer realm="KernelIndex API"' + (', error="invalid_token"' if presented else "")
    return response


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return problem_response(request, 404, str(exc) or "not found")


@api.exception_handler(ValidationError)
def invalid_parameters(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """A parameter of the wrong type, said in words as every other error is (ninja would send a list); `field`
    names the first."""
    names = [".".join(map(str, error["loc"][1:])) for error in exc.errors]
    errors = "; ".join(f"{name}: {error['msg']}" for name, error in zip(names, exc.errors, strict=True))
    return problem_response(request, 422, errors, names[0] if names else None)


# -- submissions ---------------------------------------------------------------------

SUBMISSION_BODY = schemas.submission_body(MAX_RUNS, MAX_BODY_BYTES, ACCEPTED_TYPES)


@api.post(
    "/runs",
    auth=BearerToken(),
    operation_id="submitRuns",
    summary="Submit runs",
    response={
        200: schemas.Submission,
        201: schemas.Submission,
        **problems(401, 413, 415, 429),
        **problems(403, 422, model=SubmissionProblem),
    },
    openapi_extra={
        "requestBody": SUBMISSION_BODY,
        **linked(200, 201, run=follow("getRun", run_id="$response.body#/runs/0/runId")),
    },
)
def submit_runs(
    request: HttpRequest,
    redigest: Annotated[
        bool,
        param.Query(
            description="Store a manifest whose declared digests were made by another recipe under KernelIndex's, "
            "keeping each declared value as provenance (import_runs --redigest); without it such a manifest is "
            "refused, naming both values."
        ),
    ] = False,
) -> Any:
    """Import native manifests as `import_runs` does: all or nothing, content-addressed, idempotent.

    201 when something new was stored, 200 when every run was stored before exactly so. A run appears as
    "reported"; its Implementation document may carry the solution's sources, so that a moderator can rerun it.
    """
    token: ApiToken = request.auth  # type: ignore[attr-defined]
    limit = settings.API_SUBMISSIONS_PER_HOUR
    if wait := ratelimit.take(f"api:submissions:{token.pk}", limit, RATE_WINDOW_SECONDS):
        detail = f"more than {limit} submissions an hour with this token; try again later"
        response = problem_response(request, 429, detail)
        response["Retry-After"] = str(wait)
        return response
    try:
        accepted = submit(request, token, redigest=redigest)
    except SubmissionRefusedError as refused:
        return problem_response(request, refused.status, refused.detail, refused.field)
    except RecordError as error:
        status = 403 if isinstance(error, OutOfScopeError) else 422
        said = refusal(error)
        return problem_response(request, status, said.detail, said.field, **said.place)
    runs = [
        {
            "runId": run_id,
            "url": request.build_absolute_uri(reverse("runs:detail", args=[run_id])),
            "digest": d,
            "line": n,
        }
        for run_id, d, n in accepted.runs
    ]
    result = accepted.result
    body = {"created": result.created, "updated": result.updated, "unchanged": result.unchanged, "runs": runs}
    return Status(201 if accepted.stored_anything else 200, body)


# -- reads ---------------------------------------------------------------------------


@api.get(
    "/runs",
    operation_id="listRuns",
    summary="List runs",
    response={200: schemas.RunPage, **problems(422)},
    openapi_extra=linked(200, run=follow("getRun", run_id="$response.body#/runs/0/runId")),
)
def list_runs(
    request: HttpRequest,
    q: Annotated[
        str | None,
        param.Query(
            max_length=QUERY_MAX_LENGTH, description="Search: a run id, a definition, implementation or project."
        ),
    ] = None,
    source: Annotated[SourceName | None, param.Query(description="Runs of this source.")] = None,
    gpu: Annotated[
        str | None,
        param.Query(
            max_length=HARDWARE_MAX_LENGTH,
            description="Runs on this hardware: a product as runs name it, e.g. NVIDIA B200 (one without runs "
            "lists none).",
        ),
    ] = None,
    evidence: Annotated[EvidenceLevel | None, param.Query(description="Runs of this evidence level.")] = None,
    after: Annotated[str | None, param.Query(description="The cursor of the page before (from `next`).")] = None,
    limit: Annotated[
        int | None, param.Query(ge=1, le=MAX_LIMIT, description="Runs a page (the home page's number when left out).")
    ] = None,
) -> Any:
    """Listed runs as the home page lists them: newest first, or most relevant first for a query (`q`), filtered
    by `source`, `gpu` and `evidence`. A page links the next one (`next`: the same query, `after` its cursor)."""
    form, page = pages.run_search(request.GET, size=limit, any_hardware=True)
    if form.errors:
        errors = "; ".join(f"{name}: {' '.join(map(str, messages))}" for name, messages in form.errors.items())
        return problem_response(request, 422, f"invalid filters: {errors}", next(iter(form.errors)))
    return serializers.search_json(request, form, page)


@api.get(
    "/runs/{run_id}",
    operation_id="getRun",
    summary="A run",
    response={200: schemas.RunDetail, **problems(404, 422)},
    openapi_extra=linked(
        200,
        definition=follow("getDefinition", source="$response.body#/source", name="$response.body#/definition"),
        rerun=follow("getRerun", rerun_id="$response.body#/manifest/reruns/0/id"),
    ),
)
def get_run(
    request: HttpRequest,
    run_id: Annotated[str, param.Path(pattern=f"^{RUN_ID_PATTERN.pattern}$", description="The run's permalink id.")],
) -> Any:
    """A run's summary, and its canonical manifest with its evidence and reruns, as its `.json` twin serves it."""
    run = get_run_or_404(run_id)
    documents = run_documents(run)
    manifest = run_manifest_text(run, documents, pages.twin_index(run, documents))
    withdrawn = {"at": run.withdrawn_at.isoformat(), "reason": run.withdrawn_reason} if run.withdrawn_at else None
    return {
        **serializers.run_summary(run),
        "manifestUrl": request.build_absolute_uri(reverse("runs:detail_json", args=[run.run_id])),
        "withdrawn": withdrawn,
        "manifest": json.loads(manifest),
    }


@api.get(
    "/groups/{key}",
    operation_id="getGroup",
    summary="A comparison group",
    response={200: schemas.Group, **problems(404, 422)},
    openapi_extra=linked(200, run=follow("getRun", run_id="$response.body#/runs/0/runId")),
)
def get_group(
    request: HttpRequest,
    key: Annotated[str, param.Path(pattern=DIGEST, description="The group's comparison key.")],
    after: Annotated[str | None, param.Query(description="The cursor of the page before (from `next`).")] = None,
    run: Annotated[str, param.Query(description="A run id to highlight; another run's is ignored.")] = "",
) -> Any:
    """A comparison group's leaderboard as its page shows it, a page at a time (follow `next`); `run` highlights one."""
    return serializers.group_json(request, pages.group_page(get_group_or_404(key), after, run))


@api.get(
    "/definitions/{source}/{path:name}",
    operation_id="getDefinition",
    summary="A definition",
    response={200: schemas.Definition, **problems(404, 422)},
    openapi_extra=linked(200, group=follow("getGroup", key="$response.body#/groups/0/key")),
)
def get_definition(
    request: HttpRequest,
    source: Annotated[SourceName, param.Path(description="The source that publishes it.")],
    name: Annotated[
        str, param.Path(min_length=1, max_length=DEFINITION_NAME_MAX_LENGTH, description="Its name, slashes and all.")
    ],
) -> Any:
    """A benchmark definition, its cases and its comparison groups. Names may hold slashes."""
    return serializers.definition_json(pages.definition_page(get_definition_or_404(source, name)))


@api.get(
    "/reruns/{rerun_id}",
    operation_id="getRerun",
    summary="A rerun",
    response={200: schemas.Rerun, **problems(404, 422)},
    openapi_extra=linked(
        200,
        run=follow("getRun", run_id="$response.body#/run/runId"),
        result=follow("getRun", run_id="$response.body#/resultRun/runId"),
    ),
)
def get_rerun(
    request: HttpRequest, rerun_id: Annotated[int, param.Path(ge=1, le=MAX_ID, description="The rerun's number.")]
) -> Any:
    """A controlled rerun: its state, verdict and the run it produced, as the run page lists it."""
    found = (
        RerunRequest.objects.select_related("run", "result_run", "attestation__worker_key").filter(pk=rerun_id).first()
    )
    if found is None:
        raise Http404(f"No rerun {rerun_id}")
    run, result_run = found.run, found.result_run
    # The row the run page lists for this rerun (selectors.rerun_rows), read for this rerun alone.
    result = document_value(result_run.digest) if result_run else None
    row = rerun_row(found, result, run, run_hardware_class(run))
    return {"run": {"runId": run.run_id, "url": run.get_absolute_url()}, **rerun_json(row)}


@api.get(
    "/workers",
    operation_id="listWorkers",
    summary="The rerun workers' keys",
    response={200: schemas.Workers, **problems()},
)
def list_workers(request: HttpRequest) -> Any:
    """Every public key of this site's own rerun workers (never one a dump listed), with its revocation: what
    checks the attestation a rerun links (`python -m records.attestation verify ATTESTATION --keys
    workers.json`); and the site's own key, which signs every job a worker runs."""
    workers = [worker_key_json(key) for key in WorkerKey.objects.registered_here().order_by("key_id")]
    site_key = site_public_key()
    return {"workers": workers, "site": {"publicKey": site_key, "keyId": key_id(site_key)}}
