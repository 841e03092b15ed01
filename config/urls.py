from django.contrib import admin
from django.urls import include, path, re_path

from agents_app.api.site import api, api_not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("", include("agents_app.urls")),
]
