"""The export over HTTP: the download of an approved version's document, the runtime's API
with bearer tokens (ETag, 304, gzip, the fetch log), the published JSON Schema; and the
application's production states coming in (`POST /api/sets/<slug>/states`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    JsonResponse,
)
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import exports, services
from questions.core import ingest
from questions.core.numbers import whole_number
from questions.selectors.teams import visible_sets
from questions.services.ingest import OverQuota
from questions.services.tokens import READ, Bearer


def _export_response(
    request: HttpRequest, ref: exports.ExportRef, *, download: bool, if_none_match: str = ""
) -> HttpResponse:
    """The export document; its ETag is the hash of these very bytes, so any change of body
    changes it, and an `If-None-Match` that holds it gets a 304. A client that accepts gzip
    gets the body gzipped (made once per version), its ETag marked weak as Django's own gzip
    does; either form of the tag matches. A 304 carries no body and so no `Content-Type` (the
    HTML default of a bare response would misname the JSON it stands for); it repeats the
    200's validators and caching headers (RFC 9110, 15.4.5)."""
    body = exports.export_body(ref)
    etag = f'"{body.etag}"'
    gzipped = "gzip" in request.headers.get("Accept-Encoding", "").lower()
    shown_etag = f"W/{etag}" if gzipped else etag
    if _etag_matches(if_none_match, etag):
        response = HttpResponseNotModified()  # the same validators and links as its 200
    else:
        response = HttpResponse(
            body.gzipped if gzipped else body.text, content_type="application/json; charset=utf-8"
        )
        if gzipped:
            response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["ETag"] = shown_etag
    response["Link"] = (
        f'<{request.build_absolute_uri(reverse("export-schema"))}>; rel="describedby"'
    )
    response["Cache-Control"] = "no-cache"
    if response.status_code == 304:
        return response
    if download:
        response["Content-Disposition"] = f'attachment; filename="{ref.slug}-v{ref.number}.json"'
    return response


@require_GET
def version_export(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Download the export document of an approved version (of a set of the user's teams)."""
    ref = exports.export_ref(slug, number=number)
    if ref is None or not visible_sets(request.user).filter(pk=ref.set_id).exists():
        raise Http404("No such approved version.")
    return _export_response(request, ref, download=True)


@login_not_required
@require_GET
def export_schema(request: HttpRequest) -> HttpResponse:
    """The committed JSON Schema (draft 2020-12) of the export document, at a stable URL."""
    return FileResponse(
        open(exports.EXPORT_SCHEMA_PATH, "rb"), content_type="application/schema+json"
    )


def _etag_matches(header: str, etag: str) -> bool:
    for candidate in header.split(","):
        tag = candidate.strip().removeprefix("W/")
        if tag == "*" or tag == etag:
            return True
    return False


def _bearer(request: HttpRequest, slug: str) -> Bearer | None:
    """The active token the request's `Authorization: Bearer …` names, or None."""
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return services.api_token_authenticate(raw.strip(), slug=slug)


def _unauthorized() -> JsonResponse:
    response = JsonResponse(
        {
            "status": 401,
            "code": "no_valid_token",
            "detail": "A valid API token is needed: Authorization: "
            "Bearer <token> (create one with manage.py questions token).",
        },
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="decision-console"'
    return response


@login_not_required
@require_http_methods(["GET", "HEAD"])
def api_export(request: HttpRequest, slug: str) -> HttpResponse:
    """`GET /api/sets/<slug>/export.json?label=L` (or `?version=N`) for the runtime, with
    `Authorization: Bearer <token>`. 401 without a good token; 404 for an unknown label or
    version or one that is not approved — never a fallback; 304 when `If-None-Match` holds."""
    bearer = _bearer(request, slug)
    if bearer is None:
        return _unauthorized()
    try:
        services.api_token_permit(bearer, scope=READ, slug=slug)
    except services.Refusal as exc:
        return JsonResponse(exc.to_json(), status=exc.status)
    label, number = request.GET.get("label"), request.GET.get("version")
    if (label is None) == (number is None):
        return JsonResponse(
            {"detail": "Give exactly one of ?label=NAME or ?version=N."}, status=400
        )
    read = None if number is None else whole_number(number, digits=9)
    if number is not None and read is None:
        return JsonResponse(
            {"detail": f"version must be a whole number in ASCII digits, not {number[:20]!r}."},
            status=400,
        )
    if label is not None and "\x00" in label:
        return JsonResponse({"detail": "label holds a NUL character (\\x00)."}, status=400)
    ref = exports.export_ref(slug, label=label, number=read)
    if ref is None:
        what = f"label {label!r}" if label is not None else f"version {number}"
        return JsonResponse({"detail": f"{slug} has no approved {what}."}, status=404)
    response = _export_response(
        request, ref, download=False, if_none_match=request.headers.get("If-None-Match", "")
    )
    services.export_fetch_record(
        token_id=bearer.id,
        set_id=ref.set_id,
        label=label,
        version_id=ref.version_id,
        etag=response["ETag"].removeprefix("W/").strip('"'),
        status=response.status_code,
    )
    return response


@csrf_exempt  # a bearer token, never a session's cookie, is what this takes
@login_not_required
@require_POST
def api_states(request: HttpRequest, slug: str) -> HttpResponse:
    """`POST /api/sets/<slug>/states` with `Authorization: Bearer <ingest token>`: one record as
    `application/json`, or NDJSON (`application/x-ndjson`), taken whole or refused whole by
    `services.states_ingest`; 202 with the counts. 401 without a good token; every refusal is
    JSON with its status (403, 400, 413, 415, 422, 429 with `Retry-After`), and names no
    state."""
    bearer = _bearer(request, slug)
    if bearer is None:
        return _unauthorized()
    # one byte past the limit is enough to tell a body too large (the service says 413)
    body = request.read(settings.DECISIONS_INGEST_MAX_BYTES + 1)
    try:
        counts = services.states_ingest(
            slug=slug,
            body=body,
            media_type=ingest.media_type(request.headers.get("Content-Type", "")),
            by=bearer,
        )
    except services.Refusal as exc:
        response = JsonResponse(exc.to_json(), status=exc.status)
        if isinstance(exc, OverQuota):
            response["Retry-After"] = str(exc.retry_after)
        return response
    return JsonResponse(counts.as_json(), status=202)
