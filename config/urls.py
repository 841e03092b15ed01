from django.contrib import admin
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path, re_path

from agents_app.api.site import api, api_not_found

FAVICON = "agentdesk/favicon.svg"

urlpatterns = [
    # Pages without the <link rel="icon"> (the admin's, the API docs) make browsers ask here.
    path("favicon.ico", lambda request: HttpResponsePermanentRedirect(static(FAVICON))),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    # Any path under /api/, newlines included ("." stops at one: Django's HTML 404 answered).
    re_path(r"^api/(?P<rest>[\s\S]*)\Z", api_not_found),
    path("", include("agents_app.urls")),
]
