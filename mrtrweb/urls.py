from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("mrtrweb.core.urls")),
    path("", include("mrtrweb.calls.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
