"""Querysets compiled to SQL once per database, then run again with new values.

Django builds and compiles a queryset's SQL each time it is evaluated. For the short lookups
made on every start, round and delivery (a row by a key or two) that costs several times what
the database takes to answer (docs/performance.md, issue 18). A :class:`Prepared` lookup is
built with the ORM the first time it runs on a database, and its SQL is kept; later runs send
that same statement with their own values (rows come back through ``Manager.raw``, with every
field's conversion from the database, decryption included), no queryset built.

The values' places among the statement's parameters are found by building the queryset with
stand-ins nothing else could be (one per value, of the value's type), so the SQL is always
Django's own, quoted and shaped for the backend. Only lookups whose SQL does not depend on the
values fit: no ``None`` (``IS NULL`` is another statement), no lists (an ``IN`` of another
length is too), no ``select_related`` (rows of other models); each is refused, never answered
wrongly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import connections, models, router

__all__ = ["Prepared"]

M = TypeVar("M", bound=models.Model)


def _stand_in(kind: type, index: int) -> Any:
    """The ``index``-th value's stand-in: none is a key or a word the app ever looks up. The
    numbers are negative (no key is) and within a small integer's range: Django compiles a
    lookup of a number its field cannot hold into another statement."""
    if kind is int:
        return -32000 - index
    if kind is str:
        return f"\x00mrtrweb-prepared-{index}\x00"
    raise TypeError(f"a prepared lookup takes int or str values, not {kind.__name__}")


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
        self._stand_ins = [_stand_in(kind, i) for i, kind in enumerate(kinds)]
        self._model: type[M] | None = None
        # (shape, alias, vendor) -> (SQL, the parameters with stand-ins, each value's places).
        self._compiled: dict[tuple[str, str, str], tuple[str, tuple[Any, ...], list[list[int]]]]
        self._compiled = {}
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
        model, alias, sql, params = self._statement(shape, values)
        return list(model._default_manager.raw(sql, params, using=alias))

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
        if self._model is None:
            self._model = self._queryset().model
        alias = router.db_for_read(self._model)
        key = (shape, alias, connections[alias].vendor)
        sql, stand_ins, places = self._compiled.get(key) or self._compile(key)
        params = list(stand_ins)
        for value, kind, positions in zip(values, self.kinds, places, strict=True):
            for position in positions:
                params[position] = kind(value)  # an enum's or a choice's plain value
        return self._model, alias, sql, params

    def _queryset(self) -> models.QuerySet[M]:
        queryset = self.build(*self._stand_ins)
        if queryset.query.select_related:
            raise ValueError(f"{self!r}: rows of related models cannot be read back")
        return queryset

    def _compile(self, key: tuple[str, str, str]) -> tuple[str, tuple[Any, ...], list[list[int]]]:
        shape, alias, _ = key
        with self._lock:
            if key in self._compiled:
                return self._compiled[key]
            queryset = _SHAPES[shape](self._queryset())
            sql, params = queryset.query.get_compiler(alias).as_sql()
            places = [
                [p for p, param in enumerate(params) if param == stand_in]
                for stand_in in self._stand_ins
            ]
            for i, positions in enumerate(places):
                if not positions:
                    raise ValueError(f"{self!r}: value {i} is not a parameter of {sql}")
            self._compiled[key] = compiled = (sql, tuple(params), places)
            return compiled
