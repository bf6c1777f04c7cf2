"""The ASGI application that uvicorn serves: HTTP goes to Django, websockets to channels."""

import os
import warnings

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mrtrweb.settings")

# Set Django up before anything imports models (channels' auth middleware does).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from mrtrweb.core.request_threads import RequestThreads  # noqa: E402
from mrtrweb.live.origins import SameOriginValidator  # noqa: E402
from mrtrweb.live.routing import websocket_urlpatterns  # noqa: E402
from mrtrweb.live.worker import with_inprocess_worker  # noqa: E402

# WhiteNoise hands Django a file with a synchronous iterator; under ASGI Django reads it in a
# thread and warns on every static file. Our static files are small, so the warning is noise.
warnings.filterwarnings(
    "ignore",
    message="StreamingHttpResponse must consume synchronous iterators",
    category=Warning,
)

# /ws/calls/<id>/ and /ws/inbox/ (mrtrweb/live/routing.py).
router = ProtocolTypeRouter(
    {
        # Each request's synchronous code in a thread of its own, reused by later requests.
        "http": RequestThreads(django_asgi_app),
        # Other pages (other sites, or another port of this host) must not open sockets with
        # our users' cookies: the Origin is checked as Django checks a form's (live/origins.py).
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Also answers the lifespan protocol, and runs the task worker inside this process when
# MRTRWEB_INPROCESS_WORKER is on (the embedded default; mrtrweb/live/worker.py).
application = with_inprocess_worker(router)
