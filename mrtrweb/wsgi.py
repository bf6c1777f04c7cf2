"""WSGI entry point, for tools that expect one; the served app is ``mrtrweb.asgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mrtrweb.settings")

application = get_wsgi_application()
