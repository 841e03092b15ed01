"""Django test clients as each kind of caller: a script with an API key, a person logged in."""

from typing import Any

from django.test import Client

from agents_app.models import ApiKey


def make_api_key(user, name: str = "script", **fields: Any) -> str:
    """Store a key for `user` as the admin does and return the raw key."""
    raw = ApiKey.generate()
    key = ApiKey(user=user, name=name, **fields)
    key.set_key(raw)
    key.save()
    return raw


def key_client(raw_key: str) -> Client:
    """A script client: a bearer key, no cookies, CSRF enforced as for any real client."""
    return Client(enforce_csrf_checks=True, headers={"authorization": f"Bearer {raw_key}"})


def logged_in(user) -> Client:
    """A client logged in as `user`, as a browser is after signing in."""
    client = Client()
    client.force_login(user)
    return client
