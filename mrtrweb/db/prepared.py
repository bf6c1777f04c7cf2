"""Lookups by a few values whose SQL the ORM writes once per database, then sent again.

Django builds and compiles a queryset's SQL each time it is evaluated. For the short lookups
made on every start, round and delivery (a row by a key or two, a round with its call and
people) that costs several times what the database takes to answer. A :class:`Prepared`
lookup asks the ORM for its statement the first time it runs on a database, built with
stand-ins nothing else could be (one per value, of the value's type), and notes where each
stand-in went among the parameters; later runs send that statement with their own values.

Only public parts are used: the statement is the ``values_list`` of the model's concrete
fields (and, under ``select_related``, of each related model's, along the same paths), so its
columns are in an order this module chose; rows are made with ``Model.from_db``, each column
converted by the backend's and its field's ``get_db_converters``, and related rows set through
their foreign keys. Only lookups whose SQL does not depend on the values fit: no ``None``
(``IS NULL`` is another statement), no lists; each is refused with ``TypeError``, never
answered wrongly. A queryset this module does not make rows for (annotations, extra columns,
``defer``, ``only`` with ``select_related``) is run by the ORM each time: only not faster.

:class:`RowConversions` converts the values of a statement written out by hand
(``people.roles.person_sql``) the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from django.db import connections, models, router

__all__ = ["Prepared", "RowConversions"]

M = TypeVar("M", bound=models.Model)


def stand_in(kind: type, index: int) -> Any:
    """The ``index``-th value's stand-in: none is a key, a word or a moment the app ever looks
    up. The numbers are negative (no key is) and within a small integer's range: Django
    compiles a lookup of a number its field cannot hold into another statement."""
    if kind is int:
        return -32000 - index
    if kind is str:
        return f"\x00mrtrweb-prepared-{index}\x00"
    if kind is datetime:
        return datetime(1901, 1, 1, 0, index // 60, index % 60, 271828, tzinfo=UTC)
    raise TypeError(f"a prepared lookup takes int, str or datetime values, not {kind.__name__}")


def sent_form(kind: type, value: Any, connection: Any) -> Any:
    """``value`` as the ORM sends it for a field of its kind: a datetime adapted by the
    backend (SQLite takes text in UTC), anything else as its plain type (an enum's or a
    choice's value)."""
    if kind is datetime:
        return connection.ops.adapt_datetimefield_value(value)
    return kind(value)


# How each way of running shapes the built queryset, as the queryset's own method would.
_SHAPES: dict[str, Callable[[models.QuerySet[Any]], models.QuerySet[Any]]] = {
    "all": lambda queryset: queryset,
    "first": lambda queryset: (queryset if queryset.ordered else queryset.order_by("pk"))[:1],
    "exists": lambda queryset: queryset[:1],
}


@dataclass(frozen=True)
class _Model:
    """One model's columns in a statement: from ``start``, its ``fields`` in order; set on
    the object of ``parent`` (an index among the statement's models) through ``via``."""

    model: type[models.Model]
    fields: tuple[models.Field[Any, Any], ...]
    start: int
    parent: int | None
    via: str | None


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: tuple[Any, ...]
    places: tuple[tuple[int, ...], ...]  # each value's places among the parameters
    models: tuple[_Model, ...]  # the root's first; empty: a shape that makes no rows
    conversions: RowConversions | None


class Prepared(Generic[M]):
    """``build(*values)``, its statement written once per database and run with new values.

    ``build`` returns the queryset of one model's rows (from its manager), filtered and
    ordered as wanted (it is called with stand-ins, once per database and way of running);
    ``kinds`` is each value's type. :meth:`first` and :meth:`exists` slice it as
    ``QuerySet.first`` and ``exists`` do."""

    def __init__(self, build: Callable[..., models.QuerySet[M]], *kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self.stand_ins = [stand_in(kind, i) for i, kind in enumerate(kinds)]
        self.model: type[M] | None = None
        # (shape, alias, vendor) -> the statement, or None: the ORM runs it each time.
        self.kept: dict[tuple[str, str, str], _Statement | None] = {}
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Prepared {getattr(self.build, '__qualname__', self.build)}>"

    def all(self, *values: Any) -> list[M]:
        """The rows, as the queryset would give them."""
        return self._rows("all", values)

    def first(self, *values: Any) -> M | None:
        """The first row (by key, unless the queryset is ordered), or None."""
        rows = self._rows("first", values)
        return rows[0] if rows else None

    def exists(self, *values: Any) -> bool:
        """Whether there is a row."""
        self._check(values)
        alias, statement = self._statement("exists")
        if statement is None:
            return self.build(*values).exists()
        with connections[alias].cursor() as cursor:
            cursor.execute(statement.sql, self._params(statement, values, alias))
            return cursor.fetchone() is not None

    def _rows(self, shape: str, values: tuple[Any, ...]) -> list[M]:
        self._check(values)
        alias, statement = self._statement(shape)
        if statement is None:
            return list(_SHAPES[shape](self.build(*values)))
        connection = connections[alias]
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, self._params(statement, values, alias))
            rows = cursor.fetchall()
        assert statement.conversions is not None
        return [_objects(statement, list(row), alias, connection) for row in rows]

    def _check(self, values: tuple[Any, ...]) -> None:
        if len(values) != len(self.kinds):
            raise TypeError(f"{self!r} takes {len(self.kinds)} values, {len(values)} given")
        for value, kind in zip(values, self.kinds, strict=True):
            # None or a list would change the SQL; a bool is an int, but not a key.
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"{self!r}: {value!r} is not {kind.__name__}")
            # The ORM would make a naive one aware (with a warning) first.
            if isinstance(value, datetime) and kind is datetime and value.tzinfo is None:
                raise TypeError(f"{self!r}: {value!r} has no time zone")

    def _params(self, statement: _Statement, values: tuple[Any, ...], alias: str) -> list[Any]:
        params = list(statement.params)
        connection = connections[alias]
        for value, kind, positions in zip(values, self.kinds, statement.places, strict=True):
            sent = sent_form(kind, value, connection)
            for position in positions:
                params[position] = sent
        return params

    def _statement(self, shape: str) -> tuple[str, _Statement | None]:
        if self.model is None:
            self.model = self.build(*self.stand_ins).model
        alias = router.db_for_read(self.model)
        key = (shape, alias, connections[alias].vendor)
        if key not in self.kept:
            with self.lock:
                if key not in self.kept:
                    self.kept[key] = self._write(shape, self.build(*self.stand_ins), alias)
        return alias, self.kept[key]

    def _write(self, shape: str, queryset: models.QuerySet[M], alias: str) -> _Statement | None:
        """The statement of ``queryset`` run in ``shape`` on ``alias``, or None: the ORM's."""
        query = queryset.query
        if query.annotation_select or query.extra_select or query.select_related is True:
            return None
        names, defer = query.deferred_loading
        if names and (defer or query.select_related):
            return None
        plan = _plan(queryset.model, query.select_related or {}, set(names))
        if shape == "exists":
            columns: list[str] = ["pk"]
            plan = []
        else:
            columns = [
                (f"{path}__" if path else "") + field.name
                for path, each in plan
                for field in each.fields
            ]
        statement = _SHAPES[shape](queryset.values_list(*columns))
        sql, params = statement.query.get_compiler(using=alias).as_sql()
        connection = connections[alias]
        sent = [
            sent_form(kind, standing_in, connection)
            for kind, standing_in in zip(self.kinds, self.stand_ins, strict=True)
        ]
        places = tuple(tuple(p for p, param in enumerate(params) if param == s) for s in sent)
        if not all(places):  # a value the SQL holds in another form: the ORM's each time
            return None
        made = tuple(each for _, each in plan)
        conversions = RowConversions(
            [field.get_col(each.model._meta.db_table) for each in made for field in each.fields]
        )
        return _Statement(sql, tuple(params), places, made, conversions if made else None)


def _plan(
    model: type[models.Model], related: dict[str, Any], only: set[str]
) -> list[tuple[str, _Model]]:
    """The statement's models in column order, each with its path from the root: the root's
    concrete fields (or those ``only`` names, and the key), then each related model's."""
    fields = tuple(
        f
        for f in model._meta.concrete_fields
        if not only or f.primary_key or f.name in only or f.attname in only
    )
    plan = [("", _Model(model, fields, 0, None, None))]
    start = len(fields)

    def walk(parent: int, prefix: str, owner: type[models.Model], tree: dict[str, Any]) -> None:
        nonlocal start
        for name, subtree in tree.items():
            target = owner._meta.get_field(name).related_model
            assert isinstance(target, type)
            each = _Model(target, tuple(target._meta.concrete_fields), start, parent, name)
            start += len(each.fields)
            path = f"{prefix}__{name}" if prefix else name
            plan.append((path, each))
            walk(len(plan) - 1, path, target, subtree)

    walk(0, "", model, related)
    return plan


def _objects(statement: _Statement, values: list[Any], alias: str, connection: Any) -> Any:
    """The root object of one row, its related objects set on it."""
    assert statement.conversions is not None
    statement.conversions.convert(values, connection)
    made: list[Any] = []
    for each in statement.models:
        row = values[each.start : each.start + len(each.fields)]
        pk_at = next(i for i, f in enumerate(each.fields) if f.primary_key)
        obj = None
        if row[pk_at] is not None:  # None: no related row (a nullable key, a LEFT JOIN)
            obj = each.model.from_db(alias, [f.attname for f in each.fields], row)
        made.append(obj)
        if each.parent is not None and each.via is not None and made[each.parent] is not None:
            setattr(made[each.parent], each.via, obj)
    return made[0]


class RowConversions:
    """What the ORM does to each of ``columns`` (``Col`` expressions) as it reads them, for
    a statement written out by hand: the backend's and each field's ``get_db_converters``."""

    def __init__(self, columns: Sequence[Any]) -> None:
        self.columns = tuple(columns)
        # Per vendor, the columns that have any conversion (most have none).
        self.converted: dict[str, tuple[int, ...]] = {}

    def convert(self, values: list[Any], connection: Any) -> None:
        """Convert one row's ``values`` (in the columns' order) in place."""
        positions = self.converted.get(connection.vendor)
        found = None
        if positions is None:
            found = [self._converters(column, connection) for column in self.columns]
            positions = tuple(i for i, each in enumerate(found) if each)
            self.converted[connection.vendor] = positions
        for position in positions:
            column = self.columns[position]
            converters = found[position] if found else self._converters(column, connection)
            for converter in converters:
                values[position] = converter(values[position], column, connection)

    @staticmethod
    def _converters(column: Any, connection: Any) -> list[Any]:
        return connection.ops.get_db_converters(column) + column.get_db_converters(connection)
