from django.contrib import admin
from django.urls import include, path

from mrtrweb.core import errors

urlpatterns = [
    path("", include("mrtrweb.core.urls")),
    path("", include("mrtrweb.start_pages.urls")),
    path("", include("mrtrweb.calls.urls")),
    path("dashboard/", include("mrtrweb.dashboard.urls")),
    path("inbox/", include("mrtrweb.inbox.urls")),
    path("live/", include("mrtrweb.live.urls")),
    path("accounts/", include("mrtrweb.accounts.signin_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("operators/", include("mrtrweb.servers.urls")),
    path("operators/", include("mrtrweb.policies.urls")),
    path("oauth/", include("mrtrweb.authorizations.urls")),
    path("api/v1/", include("mrtrweb.api.urls")),
    path("account/tokens/", include("mrtrweb.api.page_urls")),
    path("account/two-step/", include("mrtrweb.accounts.urls")),
    path("account/away/", include("mrtrweb.policies.away_urls")),
    path("account/", include("mrtrweb.accounts.settings_urls")),
    path("oidc/", include("mrtrweb.accounts.oidc_urls")),
    path("admin/", admin.site.urls),
]

# The site's own error pages (mrtrweb/core/errors.py): its header, the reason, a way back.
handler403 = errors.permission_denied
handler404 = errors.page_not_found
handler500 = errors.server_error
