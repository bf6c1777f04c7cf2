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


class Prepared(Generic[M]):
    """``build(*values)``, compiled once per database and run with new ``values``.

    ``build`` returns the queryset of one model's rows (sliced, ordered, filtered as wanted;
    it is called once per database, with stand-ins); ``kinds`` is each value's type."""

    def __init__(self, build: Callable[..., models.QuerySet[M]], *kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._model: type[M] | None = None
        # (alias, vendor) -> (SQL, the parameters with the stand-ins, each value's places).
        self._compiled: dict[tuple[str, str], tuple[str, tuple[Any, ...], list[list[int]]]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Prepared {getattr(self.build, '__qualname__', self.build)}>"

    # -- running ---------------------------------------------------------------------------

    def all(self, *values: Any) -> list[M]:
        """The rows, as the queryset would give them (its own model's fields only)."""
        model, alias, sql, params = self._statement(values)
        return list(model._default_manager.raw(sql, params, using=alias))

    def first(self, *values: Any) -> M | None:
        """The first row, or None (``build`` orders and slices as ``.first()`` would)."""
        rows = self.all(*values)
        return rows[0] if rows else None

    def exists(self, *values: Any) -> bool:
        """Whether there is a row (``build`` should slice to one and select little)."""
        _, alias, sql, params = self._statement(values)
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone() is not None

    # -- compiling -------------------------------------------------------------------------

    def _statement(self, values: tuple[Any, ...]) -> tuple[type[M], str, str, list[Any]]:
        if len(values) != len(self.kinds):
            raise TypeError(f"{self!r} takes {len(self.kinds)} values, {len(values)} given")
        for value, kind in zip(values, self.kinds, strict=True):
            # None or a list would change the SQL; a bool is an int, but not a key.
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"{self!r}: {value!r} is not {kind.__name__}")
        model = self._model or self._compile_first()
        alias = router.db_for_read(model)
        compiled = self._compiled.get((alias, connections[alias].vendor))
        if compiled is None:
            compiled = self._compile(alias)
        sql, stand_ins, places = compiled
        params = list(stand_ins)
        for value, kind, positions in zip(values, self.kinds, places, strict=True):
            for position in positions:
                params[position] = kind(value)  # an enum's or a choice's plain value
        return model, alias, sql, params

    def _compile_first(self) -> type[M]:
        queryset = self._queryset()
        self._model = queryset.model
        return queryset.model

    def _queryset(self) -> models.QuerySet[M]:
        queryset = self.build(*(_stand_in(kind, i) for i, kind in enumerate(self.kinds)))
        if queryset.query.select_related:
            raise ValueError(f"{self!r}: rows of related models cannot be read back")
        return queryset

    def _compile(self, alias: str) -> tuple[str, tuple[Any, ...], list[list[int]]]:
        with self._lock:
            key = (alias, connections[alias].vendor)
            if key in self._compiled:
                return self._compiled[key]
            sql, params = self._queryset().query.get_compiler(alias).as_sql()
            places = []
            for i, kind in enumerate(self.kinds):
                stand_in = _stand_in(kind, i)
                positions = [p for p, param in enumerate(params) if param == stand_in]
                if not positions:
                    raise ValueError(f"{self!r}: value {i} is not a parameter of {sql}")
                places.append(positions)
            self._compiled[key] = compiled = (sql, tuple(params), places)
            return compiled
