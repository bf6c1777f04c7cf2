"""Querysets compiled to SQL once per database, then run again with new values.

Django builds and compiles a queryset's SQL each time it is evaluated. For the short lookups
made on every start, round and delivery (a row by a key or two) that costs several times what
the database takes to answer (docs/performance.md). A :class:`Prepared` lookup is
built with the ORM the first time it runs on a database, and its SQL is kept; later runs send
that same statement with their own values, no queryset built or compiled.

The values' places among the statement's parameters are found by building the queryset with
stand-ins nothing else could be (one per value, of the value's type), so the SQL is always
Django's own, quoted and shaped for the backend. Only lookups whose SQL does not depend on the
values fit: no ``None`` (``IS NULL`` is another statement), no lists (an ``IN`` of another
length is too); each is refused, never answered wrongly. Values are ints, strings or aware
datetimes (a datetime is sent as the backend adapts it for a ``DateTimeField``; compared with
any other kind of field, its stand-in is not found among the parameters, and it is refused).

Rows come back through Django's own ``QuerySet`` iteration, every field converted (tokens
decrypted) and, with ``select_related``, the related rows set on each (the round pages' and
the delivery's reads of a round with its call, connection and people): only the compiling is
skipped. Annotations, extra columns and a related manager's rows are refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from types import MethodType
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
    "exists": lambda queryset: queryset.values("pk")[:1],
}


class Prepared(Generic[M]):
    """``build(*values)``, compiled once per database and run with new ``values``.

    ``build`` returns the queryset of one model's rows, filtered and ordered as wanted (it is
    called with stand-ins, once per database and way of running); ``kinds`` is each value's
    type. :meth:`first` and :meth:`exists` slice it as ``QuerySet.first`` and ``exists`` do."""

    def __init__(self, build: Callable[..., models.QuerySet[M]], *kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._stand_ins = [stand_in(kind, i) for i, kind in enumerate(kinds)]
        self._model: type[M] | None = None
        # (shape, alias, vendor) -> (SQL, the parameters with stand-ins, each value's places).
        self._compiled: dict[tuple[str, str, str], tuple[str, tuple[Any, ...], list[list[int]]]]
        self._compiled = {}
        # (shape, alias, vendor) -> the compiler that compiled it, for a shape that makes rows.
        self._compilers: dict[tuple[str, str, str], Any] = {}
        # (shape, alias, vendor) -> the columns' conversions, the backend's unbound (below).
        self._conversions: dict[tuple[str, str, str], _Conversions] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Prepared {getattr(self.build, '__qualname__', self.build)}>"

    # -- running ---------------------------------------------------------------------------

    def all(self, *values: Any) -> list[M]:
        """The rows, as the queryset would give them (its own model's fields only)."""
        return self._rows("all", values)

    def first(self, *values: Any) -> M | None:
        """The first row, or None."""
        rows = self._rows("first", values)
        return rows[0] if rows else None

    def exists(self, *values: Any) -> bool:
        """Whether there is a row."""
        _, alias, sql, params = self._statement("exists", values)
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone() is not None

    def _rows(self, shape: str, values: tuple[Any, ...]) -> list[M]:
        """The rows, made by Django's own ``QuerySet`` iteration from a copy of the compiler
        that compiled the statement the first time: it sends the kept statement with these
        values instead of compiling again (``as_sql`` is the compiler's extension point, as
        database backends override it), and what it worked out then (which columns are whose,
        the related rows' places, the conversions) makes the rows as every queryset's are."""
        model, alias, sql, params = self._statement(shape, values)
        connection = connections[alias]
        key = (shape, alias, connection.vendor)
        compiler = _shallow_copy(self._compilers[key])
        compiler.connection = connection
        compiler.as_sql = lambda *args, **kwargs: (sql, params)
        conversions = self._conversions.get(key) or self._work_out_conversions(key, compiler)
        if conversions.kept is not None:
            converters = conversions.bound_to(connection)
            columns = conversions.columns
            compiler.get_converters = lambda expressions: (
                converters
                if len(expressions) == columns
                else type(compiler).get_converters(compiler, expressions)
            )
        query = _shallow_copy(compiler.query)
        query.get_compiler = lambda *args, **kwargs: compiler
        return list(models.QuerySet(model=model, query=query, using=alias))

    def _work_out_conversions(self, key: tuple[str, str, str], compiler: Any) -> _Conversions:
        """The columns' conversions, worked out on the first run: Django works them out on
        every run, from each of the columns' fields and the backend (some 140 columns for a
        round read with its call, connection and people)."""
        columns = [selected[0] for selected in compiler.select[0 : compiler.col_count]]
        found = type(compiler).get_converters(compiler, columns)
        conversions = _Conversions.unbound(found, len(columns), compiler.connection)
        self._conversions[key] = conversions
        return conversions

    # -- compiling -------------------------------------------------------------------------

    def _statement(
        self, shape: str, values: tuple[Any, ...]
    ) -> tuple[type[M], str, str, list[Any]]:
        if len(values) != len(self.kinds):
            raise TypeError(f"{self!r} takes {len(self.kinds)} values, {len(values)} given")
        for value, kind in zip(values, self.kinds, strict=True):
            # None or a list would change the SQL; a bool is an int, but not a key.
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"{self!r}: {value!r} is not {kind.__name__}")
            # The ORM would make a naive one aware (with a warning) first.
            if kind is datetime and value.tzinfo is None:
                raise TypeError(f"{self!r}: {value!r} has no time zone")
        if self._model is None:
            self._model = self._queryset().model
        alias = router.db_for_read(self._model)
        key = (shape, alias, connections[alias].vendor)
        sql, stand_ins, places = self._compiled.get(key) or self._compile(key)
        params = list(stand_ins)
        connection = connections[alias]
        for value, kind, positions in zip(values, self.kinds, places, strict=True):
            sent = sent_form(kind, value, connection)
            for position in positions:
                params[position] = sent
        return self._model, alias, sql, params

    def _queryset(self) -> models.QuerySet[M]:
        queryset = self.build(*self._stand_ins)
        query = queryset.query
        if query.annotation_select or query.extra_select or queryset._known_related_objects:
            raise ValueError(f"{self!r}: only a model's rows (and their related rows) are kept")
        return queryset

    def _compile(self, key: tuple[str, str, str]) -> tuple[str, tuple[Any, ...], list[list[int]]]:
        shape, alias, _ = key
        with self._lock:
            if key in self._compiled:
                return self._compiled[key]
            queryset = _SHAPES[shape](self._queryset())
            compiler = queryset.query.get_compiler(alias)
            sql, params = compiler.as_sql()
            if shape != "exists":
                # Kept without this thread's connection (each run gives it its own): kept, it
                # would outlive the thread, as its requests' connections must not.
                compiler.connection = None
                self._compilers[key] = compiler
            connection = connections[alias]
            sent = [
                sent_form(kind, standing_in, connection)
                for kind, standing_in in zip(self.kinds, self._stand_ins, strict=True)
            ]
            places = [[p for p, param in enumerate(params) if param == each] for each in sent]
            for i, positions in enumerate(places):
                if not positions:
                    raise ValueError(f"{self!r}: value {i} is not a parameter of {sql}")
            self._compiled[key] = compiled = (sql, tuple(params), places)
            return compiled


class RowConversions:
    """What the ORM does to each of ``columns`` (``Col`` expressions) as it reads them
    (``SQLCompiler.get_converters``), for a statement written out by hand: worked out on a
    database's first run and kept as :class:`Prepared` keeps its own, with nothing of that
    run's connection. Worked out on every run, they took 28 µs of each sign-in's read of a
    person by themselves."""

    def __init__(self, columns: Sequence[Any]) -> None:
        self.columns = tuple(columns)
        self._kept: dict[tuple[str, str], _Conversions] = {}

    def convert(self, values: list[Any], connection: Any) -> None:
        """Convert one row's ``values`` (in the columns' order) in place."""
        key = (connection.alias, connection.vendor)
        conversions = self._kept.get(key)
        if conversions is None:
            found = self._found(connection)
            conversions = _Conversions.unbound(found, len(self.columns), connection)
            self._kept[key] = conversions
        if conversions.kept is None:  # a converter holds its connection: Django's way
            each = self._found(connection)
        else:
            each = conversions.bound_to(connection)
        for position, (converters, expression) in each.items():
            for converter in converters:
                values[position] = converter(values[position], expression, connection)

    def _found(self, connection: Any) -> dict[int, tuple[list[Any], Any]]:
        found = {}
        for position, column in enumerate(self.columns):
            converters = connection.ops.get_db_converters(column) + column.get_db_converters(
                connection
            )
            if converters:
                found[position] = (converters, column)
        return found


class _Conversions:
    """A statement's column conversions (``SQLCompiler.get_converters``), kept with nothing
    of the connection they were worked out on.

    Why: the backend's converters are methods of ``connection.ops``, which holds its
    connection. Kept as they are, they kept that connection alive: under ASGI every request
    has a connection of its own (its thread's), and a cache of them held every one (the full
    bench's memory phase grew 1.25M -> 1.66M objects; withdrawn in 2d02f79). Here each is kept
    as its function, bound again to the running connection's ``ops`` on each run; the
    fields' own converters hold no connection (it is passed to them). A converter that does
    hold one some other way is not kept: that statement's conversions stay Django's."""

    __slots__ = ("columns", "kept")

    def __init__(self, kept: list[tuple[int, list[Any], Any]] | None, columns: int) -> None:
        # (position, [a converter, or (function,) to bind to ops], column); None: Django's.
        self.kept = kept
        self.columns = columns

    @classmethod
    def unbound(cls, found: dict[int, Any], columns: int, connection: Any) -> _Conversions:
        kept = []
        for position, (converters, expression) in found.items():
            each: list[Any] = []
            for converter in converters:
                owner = getattr(converter, "__self__", None)
                if owner is connection.ops:
                    each.append((converter.__func__,))
                elif _holds(converter, connection):
                    return cls(None, columns)
                else:
                    each.append(converter)
            kept.append((position, each, expression))
        return cls(kept, columns)

    def bound_to(self, connection: Any) -> dict[int, tuple[list[Any], Any]]:
        """The conversions bound to ``connection``'s ``ops``: made on its first run on that
        connection and kept on the connection object itself (``_BOUND``), so they live and
        die with it and nothing here holds a connection."""
        bound: dict[_Conversions, dict[int, tuple[list[Any], Any]]]
        bound = connection.__dict__.setdefault(_BOUND, {})
        made = bound.get(self)
        if made is None:
            made = bound[self] = self._bind(connection.ops)
        return made

    def _bind(self, ops: Any) -> dict[int, tuple[list[Any], Any]]:
        assert self.kept is not None
        return {
            position: (
                [
                    MethodType(converter[0], ops) if type(converter) is tuple else converter
                    for converter in converters
                ],
                expression,
            )
            for position, converters, expression in self.kept
        }


# The attribute of a connection (Django's ``DatabaseWrapper``) that holds the conversions
# bound to it, by statement (_Conversions.bound_to).
_BOUND = "_mrtrweb_prepared_conversions"


def _shallow_copy(obj: Any) -> Any:
    """What ``copy.copy`` makes of a compiler or a query (a new object of its class with its
    state, ``__getstate__``'s), without going through ``__reduce_ex__`` and ``copyreg``:
    a run makes two, on every lookup."""
    clone = object.__new__(type(obj))
    clone.__dict__.update(obj.__getstate__())
    return clone


def _holds(converter: Any, connection: Any) -> bool:
    """Whether a converter holds the connection or its ``ops`` (bound to either, or in its
    closure): then it is not one to keep beyond this connection."""
    theirs = (connection, connection.ops)
    if any(getattr(converter, "__self__", None) is each for each in theirs):
        return True
    function = getattr(converter, "__func__", converter)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if any(contents is each for each in theirs):
            return True
    return False
