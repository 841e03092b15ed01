"""Queries of the hot path compiled by the ORM once per database, then sent again with new
values: the rows a worker reads at every run (its run, the kill switch, a person's turns).

Building and compiling a QuerySet costs the ORM several times what the database spends on a
small read (a run's row by its id: ~0.8 ms of Python against ~0.2 ms for the same SQL sent
as it is and the model built from the row). A `Prepared` query is written as the QuerySet it
always is, with its varying values as arguments; the first call per database builds it with
sample values, compiles it, and finds where each sample went among the statement's
parameters; every later call sends that SQL with the new values in those places, converts
the row as the compiler would (dates, JSON) and builds the models as the ORM's iterable
does (select_related included).

    RUN = Prepared(lambda pk: Run.objects.filter(pk=pk), samples=(-1,))
    run = RUN.one(run_id)

Each sample must come out once among the parameters, as itself (an id, a name: not through
a lookup that rewrites it, such as `__contains`); a sample found twice or never fails the
first call with the query shown.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, get_related_populators


@dataclass(frozen=True)
class _Shape:
    sql: str
    params: tuple[Any, ...]
    positions: tuple[int, ...]  # where each argument goes among `params`
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]  # (column, converters, expression)
    model: Any  # the model rows are built as, None for plain rows
    init_list: tuple[str, ...]
    model_columns: slice
    related: tuple[Any, ...]  # RelatedPopulators (select_related)


class Prepared:
    """A QuerySet built by `build(*values)`, compiled once per database alias."""

    def __init__(self, build: Callable[..., QuerySet], *, samples: tuple[Any, ...]) -> None:
        self.build = build
        self.samples = samples
        self._shapes: dict[str, _Shape] = {}

    def _shape(self, alias: str) -> _Shape:
        shape = self._shapes.get(alias)
        if shape is None:
            shape = self._shapes[alias] = self._compile(alias)
        return shape

    def _compile(self, alias: str) -> _Shape:
        queryset = self.build(*self.samples)
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        params = tuple(params)
        positions = []
        for sample in self.samples:
            found = [i for i, p in enumerate(params) if type(p) is type(sample) and p == sample]
            if len(found) != 1:
                raise ValueError(
                    f"prepared query: sample {sample!r} found {len(found)} times in {sql!r}"
                )
            positions.append(found[0])
        select = compiler.select
        converters = tuple(
            (column, tuple(convs), expression)
            for column, (convs, expression) in compiler.get_converters(
                [s[0] for s in select]
            ).items()
        )
        model, init_list, columns, related = None, (), slice(0), ()
        if queryset._iterable_class is ModelIterable:
            info = compiler.klass_info
            model = info["model"]
            fields = info["select_fields"]
            columns = slice(fields[0], fields[-1] + 1)
            init_list = tuple(s[0].target.attname for s in select[columns])
            related = tuple(get_related_populators(info, select, alias))
        return _Shape(sql, params, tuple(positions), converters, model, init_list, columns, related)

    def rows(self, *values: Any) -> list[Any]:
        """The query's results for `values` (in the samples' order): models, or tuples for a
        values_list query."""
        alias = DEFAULT_DB_ALIAS
        shape = self._shape(alias)
        params = list(shape.params)
        for position, value in zip(shape.positions, values, strict=True):
            params[position] = value
        connection = connections[alias]
        with connection.cursor() as cursor:
            cursor.execute(shape.sql, params)
            fetched = cursor.fetchall()
        if shape.converters:
            converted = []
            for row in fetched:
                row = list(row)
                for column, convs, expression in shape.converters:
                    value = row[column]
                    for convert in convs:
                        value = convert(value, expression, connection)
                    row[column] = value
                converted.append(row)
            fetched = converted
        if shape.model is None:
            return [tuple(row) for row in fetched]
        found = []
        for row in fetched:
            obj = shape.model.from_db(alias, shape.init_list, row[shape.model_columns])
            for populator in shape.related:
                populator.populate(row, obj)
            found.append(obj)
        return found

    def one(self, *values: Any) -> Any:
        """The first result, or None."""
        found = self.rows(*values)
        return found[0] if found else None

    def get(self, *values: Any) -> Any:
        """The first model found; raises the model's DoesNotExist, as QuerySet.get does."""
        found = self.rows(*values)
        if not found:
            model = self._shapes[DEFAULT_DB_ALIAS].model
            raise model.DoesNotExist(f"{model.__name__} matching query does not exist.")
        return found[0]
