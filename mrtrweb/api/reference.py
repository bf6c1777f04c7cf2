"""The OpenAPI document as JSON, and as a server-rendered reference page (no JavaScript)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from .openapi import REF, document
from .problems import KINDS, TITLES, ApiError, problem_response

METHODS = ("get", "post", "patch", "put", "delete")


@require_safe
def openapi_json(request: HttpRequest) -> HttpResponse:
    return JsonResponse(document(), json_dumps_params={"indent": 1})


def _prose(text: str) -> SafeString:
    """Descriptions as HTML: escaped, with `backticked` spans as <code>."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: leave the text as it is
        return escape(text)
    html = [
        escape(p) if i % 2 == 0 else format_html("<code>{}</code>", p) for i, p in enumerate(parts)
    ]
    return mark_safe("".join(html))  # every part was escaped above


def _type_of(schema: dict[str, Any]) -> str:
    """A short human reading of a JSON schema: ``string``, ``array of RoundOut``, ..."""
    if "$ref" in schema:
        return schema["$ref"].removeprefix(REF.format(model=""))
    if "anyOf" in schema:
        return " or ".join(_type_of(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"“{v}”" for v in schema["enum"])
    if "const" in schema:
        return f"“{schema['const']}”"
    kind = schema.get("type", "any")
    if kind == "array":
        return "array of " + _type_of(schema.get("items") or {})
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "object of " + _type_of(schema["additionalProperties"])
    return str(kind)


def _operations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            body = (op.get("requestBody") or {}).get("content", {}).get("application/json")
            found.append(
                {
                    "id": op["operationId"],
                    "method": method.upper(),
                    "path": "/api/v1" + path,
                    "summary": op["summary"],
                    "description": _prose(op["description"]),
                    "parameters": [
                        {
                            "name": p["name"],
                            "where": p["in"],
                            "required": p.get("required", False),
                            "type": _type_of(p["schema"]),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "body": _type_of(body["schema"]) if body else "",
                    "responses": [
                        {
                            "status": status,
                            "description": _prose(response["description"]),
                            "type": " ".join(
                                _type_of(c["schema"]) for c in response["content"].values()
                            ),
                        }
                        for status, response in op["responses"].items()
                    ],
                }
            )
    return found


def _models(doc: dict[str, Any]) -> list[dict[str, Any]]:
    models = []
    for name, schema in sorted(doc["components"]["schemas"].items()):
        required = set(schema.get("required") or [])
        models.append(
            {
                "name": name,
                "description": _prose(schema.get("description", "")),
                "fields": [
                    {
                        "name": field,
                        "type": _type_of(prop),
                        "required": field in required,
                        "description": _prose(prop.get("description", "")),
                    }
                    for field, prop in (schema.get("properties") or {}).items()
                ],
                "enum": schema.get("enum"),
            }
        )
    return models


@require_safe
def reference(request: HttpRequest) -> HttpResponse:
    doc = document()
    context = {
        "info": {**doc["info"], "description": _prose(doc["info"]["description"])},
        "operations": _operations(doc),
        "models": _models(doc),
        "problems": [
            {"kind": kind, "status": status, "title": TITLES[status], "meaning": meaning}
            for kind, (status, meaning) in KINDS.items()
        ],
    }
    return render(request, "api/reference.html", context)


@csrf_exempt
def unknown(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Anything else under /api/v1/: a problem, not the HTML 404 page."""
    return problem_response(ApiError(404, "No such endpoint.", kind="not-found"))
