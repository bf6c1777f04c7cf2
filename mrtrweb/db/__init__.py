"""Database backends of the app's own (``DATABASES["default"]["ENGINE"]``)."""
