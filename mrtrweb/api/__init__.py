"""The JSON API (docs/api.md) on django-ninja.

- ``service``: the ``NinjaAPI``, our body parser (415, 413, 400), every error as problem+json
  (``problems``), 405 with ``Allow``;
- ``auth``: API tokens (``BearerToken``); operators-only operations check the role there,
  before the body is read;
- ``views``, ``servers``, ``answers``: the operations; their signatures and ``response=``
  models (``schemas``) are what is validated and what the OpenAPI document says;
- ``start_checks``: what a start is checked against before its call is created, as the start
  page checks it, and ``field_error``, a 422 pointing at one field of the body;
- ``openapi``: problem responses typed ``application/problem+json``;
- ``idempotency``: the ``Idempotency-Key`` of a start, written in the call's own transaction;
- ``reference``, ``tokens``, ``page_urls``: the reference page and the token pages.
"""
