"""Secrets at rest: the keys (``crypto``), the encrypted model fields (``fields``) and
``manage.py rotate_secrets``. Below every app that stores a secret; knows none of them."""
