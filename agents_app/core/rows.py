"""The hot path's rows written the short way: an INSERT of many rows, or an UPDATE of one row by
its id, as one statement whose text is built once per shape, without the ORM's compiler.

For a small row the compiler costs several times what SQLite spends on the statement (a step
writes seven events, a tool call's row and three audit rows). The values are still prepared by
each field, as the ORM prepares them, wherever the database wants something other than the
Python value (dates, JSON); what these write reads back the same through the ORM.
"""

import datetime
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=Model)

# Fields whose Python value is what either database takes as it is.
PLAIN = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "FloatField",
        "ForeignKey",
        "IntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "SmallIntegerField",
        "TextField",
    }
)
# Rows a statement at most: the shapes built stay few, and far under SQLite's variable limit.
ROWS_A_STATEMENT = 100

_inserts: dict[tuple[Any, ...], str] = {}
_updates: dict[tuple[Any, ...], tuple[str, list[Any]]] = {}
Preparer = Callable[[Any, Any], Any]  # (value, connection) -> what the database is given
_preparers: dict[tuple[Any, ...], list[tuple[Field, Preparer | None]]] = {}


def preparer(field: Field) -> Preparer | None:
    """None when the value goes as it is, else how the field prepares it for the database: the
    backend's own adapter for an aware datetime and for JSON (what the field would end with),
    the field's whole preparation for anything else."""
    kind = field.get_internal_type()
    if kind in PLAIN:
        return None
    if kind == "DateTimeField":

        def prepare_datetime(value: Any, conn: Any) -> Any:
            if isinstance(value, datetime.datetime) and value.tzinfo is not None:
                if value.tzinfo is UTC and conn.vendor == "sqlite" and conn.timezone is UTC:
                    # What the SQLite backend's adapter ends with for an aware datetime
                    # (made naive in the connection's time zone, then str), without its
                    # checks: most of the hot path's values are timezone.now().
                    return str(value.replace(tzinfo=None))
                return conn.ops.adapt_datetimefield_value(value)
            return field.get_db_prep_save(value, conn)

        return prepare_datetime
    if kind == "JSONField":
        encoder = field.encoder  # type: ignore[attr-defined]
        return lambda value, conn: (
            None if value is None else conn.ops.adapt_json_value(value, encoder)
        )
    return field.get_db_prep_save


def _fields(model: type[Model], connection: Any) -> list[tuple[Field, Preparer | None]]:
    key = (model, connection.vendor)
    fields = _preparers.get(key)
    if fields is None:
        fields = [
            (field, preparer(field))
            for field in model._meta.concrete_fields
            if not field.primary_key
        ]
        assert not any(
            getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) for f, _ in fields
        ), f"{model.__name__}: auto_now needs save()"
        _preparers[key] = fields
    return fields


def insert(objs: Sequence[Model], *, ids: bool = False) -> None:
    """INSERT `objs` (of one model, with an automatic primary key) in as few statements as
    rows allow. With `ids`, each object gets its primary key back (RETURNING, in the rows'
    order, as Django's bulk_create relies on for both databases)."""
    if not objs:
        return
    model = type(objs[0])
    connection = connections[DEFAULT_DB_ALIAS]
    fields = _fields(model, connection)
    quote = connection.ops.quote_name
    meta = model._meta
    for start in range(0, len(objs), ROWS_A_STATEMENT):
        chunk = objs[start : start + ROWS_A_STATEMENT]
        key = (model, connection.vendor, len(chunk), ids)
        sql = _inserts.get(key)
        if sql is None:
            row = f"({', '.join('%s' for _ in fields)})"
            columns = ", ".join(quote(f.column) for f, _ in fields)
            sql = (
                f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES "
                f"{', '.join(row for _ in chunk)}"
            )
            if ids:
                sql += f" RETURNING {quote(meta.pk.column)}"
            _inserts[key] = sql
        params = [
            getattr(obj, field.attname)
            if prepare is None
            else prepare(getattr(obj, field.attname), connection)
            for obj in chunk
            for field, prepare in fields
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            if ids:
                for obj, (pk,) in zip(chunk, cursor.fetchall(), strict=True):
                    obj.pk = pk
        for obj in chunk:
            obj._state.adding = False
            obj._state.db = connection.alias


def update(model: type[Model], pk: Any, **values: Any) -> int:
    """UPDATE the row of `model` whose primary key is `pk`: `values` by field name. Returns
    the rows changed (0 or 1)."""
    connection = connections[DEFAULT_DB_ALIAS]
    key = (model, connection.vendor, tuple(values))
    shape = _updates.get(key)
    if shape is None:
        meta, quote = model._meta, connection.ops.quote_name
        fields = [meta.get_field(name) for name in values]
        columns = ", ".join(f"{quote(field.column)} = %s" for field in fields)
        sql = f"UPDATE {quote(meta.db_table)} SET {columns} WHERE {quote(meta.pk.column)} = %s"
        shape = _updates[key] = (sql, [preparer(field) for field in fields])
    sql, preparers = shape
    params = [
        value if prepare is None else prepare(value, connection)
        for value, prepare in zip(values.values(), preparers, strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, pk])
        return cursor.rowcount


# For each model `new` builds: (every name a value may be given by, the foreign keys by name,
# the concrete fields with how each gets its default).
_shapes: dict[type[Model], tuple[frozenset[str], dict[str, Field], list[tuple[str, Any]]]] = {}


def new(model: type[M], **values: Any) -> M:
    """An unsaved `model` holding `values` (by field name or attribute name: `run` or
    `run_id`), every other concrete field its default: what `model(**values)` builds, at a
    fifth of its cost, for the rows a step writes by the dozen (events, audit rows, a tool
    call). Unknown names raise TypeError, as the model's own constructor does. No pre_init or
    post_init signal is sent: a model somebody listens to that way is refused."""
    shape = _shapes.get(model)
    if shape is None:
        if pre_init.has_listeners(model) or post_init.has_listeners(model):
            raise TypeError(f"{model.__name__} has init signal receivers: build it as usual")
        fields = model._meta.concrete_fields
        related = {f.name: f for f in fields if f.is_relation}
        names = frozenset(f.name for f in fields) | {f.attname for f in fields}
        shape = _shapes[model] = (names, related, [(f.attname, f.get_default) for f in fields])
    names, related, defaults = shape
    unknown = values.keys() - names
    if unknown:
        raise TypeError(f"{model.__name__}() got unexpected keyword arguments: {sorted(unknown)}")
    obj = model.__new__(model)
    obj._state = ModelState()
    attributes = obj.__dict__
    for name, value in values.items():
        field = related.get(name)
        if field is None:
            attributes[name] = value
        else:
            attributes[field.attname] = None if value is None else value.pk
            obj._state.fields_cache[name] = value
    for attname, default in defaults:
        if attname not in attributes:
            attributes[attname] = default()
    return obj
