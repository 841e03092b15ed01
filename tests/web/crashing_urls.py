"""The site's URLs plus one view that fails, for the 500 page's test."""

from django.urls import path

from config.urls import urlpatterns as site


def crash(request):
    raise RuntimeError("a bug with SECRET_KEY-like locals in scope")


urlpatterns = [path("crash/", crash), *site]
