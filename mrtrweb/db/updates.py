"""``filter(**where).exclude(**unless).update(**values)`` compiled once a shape, sent again.

Every change of a round's or a call's status is a guarded ``UPDATE`` (``calls.engine
.transitions``), several a flow, and Django builds and compiles each anew: more CPU than the
database takes to run it (docs/performance.md). :func:`update` does what
``model._default_manager.filter(**where).exclude(**unless).update(**values)`` does, but
compiles a statement once per *shape* and sends the kept SQL with the values after that. The
shape is the model, the database, the names in ``where``, ``unless`` and ``values`` in their
order, and the kind of each value: a number, a word or a moment (sent), ``None`` or a boolean
(part of the statement), a list of so many, an expression of ``F``, ``Value`` and functions.

As with :class:`.prepared.Prepared`, the SQL is always Django's own: the statement is built
with stand-ins, and each value's places among its parameters are where its stand-in went. A
value is sent as Django sends it: a field's new value through the field's
``get_db_prep_save``, a ``Value``'s through the field Django works out for it, a lookup's as
the lookup sends it (``get_prep_value``, then the field's or its target field's
``get_db_prep_value``). A shape whose stand-ins are not all found among the parameters (an
encrypted field, whose stand-in is sealed anew each time, or a backend that rewrites a value)
or that holds a value of another kind is run by the ORM every time: never answered wrongly,
only not faster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, models, router, transaction
from django.db.models import F, Func, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.lookups import FieldGetDbPrepValueMixin
from django.db.models.sql import UpdateQuery
from django.db.models.sql.where import WhereNode

from .prepared import sent_form, stand_in

__all__ = ["update"]

Convert = Callable[[Any, Any], Any]  # (value, connection) -> what is sent


class _Unprepared(Exception):
    """A value this module does not prepare: the ORM runs the update."""


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: tuple[Any, ...]
    # One per value that is sent (in the order the shape meets them): its places, its sending.
    places: tuple[tuple[int, ...], ...]
    converts: tuple[Convert, ...]


# (model, alias, vendor, shape) -> the statement, or None for a shape the ORM runs.
_statements: dict[tuple[Hashable, ...], _Statement | None] = {}
_lock = threading.Lock()
_MISSING = object()


def update(
    model: type[models.Model],
    where: Mapping[str, Any],
    values: Mapping[str, Any],
    *,
    unless: Mapping[str, Any] | None = None,
) -> int:
    """``model._default_manager.filter(**where).exclude(**unless).update(**values)``: how many
    rows changed."""
    alias = router.db_for_write(model)
    connection = connections[alias]
    unless = unless or {}
    try:
        walk = _Walk(model, rebuild=False)
        shape = walk.shape(where, unless, values)
    except _Unprepared:
        return _by_orm(model, where, unless, values)
    key = (model, alias, connection.vendor, shape)
    statement = _statements.get(key, _MISSING)
    if statement is _MISSING:
        statement = _compile(key, model, alias, where, unless, values)
    if statement is None:
        return _by_orm(model, where, unless, values)
    assert isinstance(statement, _Statement)
    params = list(statement.params)
    for value, places, convert in zip(walk.sent, statement.places, statement.converts, strict=True):
        sent = convert(value, connection)
        for place in places:
            params[place] = sent
    # As QuerySet.update: a failure inside an atomic block marks it for rollback.
    with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        return cursor.rowcount


def _by_orm(
    model: type[models.Model],
    where: Mapping[str, Any],
    unless: Mapping[str, Any],
    values: Mapping[str, Any],
) -> int:
    rows = model._default_manager.filter(**where)
    return (rows.exclude(**unless) if unless else rows).update(**values)


def _compile(
    key: tuple[Hashable, ...],
    model: type[models.Model],
    alias: str,
    where: Mapping[str, Any],
    unless: Mapping[str, Any],
    values: Mapping[str, Any],
) -> _Statement | None:
    with _lock:
        if key in _statements:
            return _statements[key]
        walk = _Walk(model, rebuild=True)
        walk.shape(where, unless, values)
        connection = connections[alias]
        statement = None
        # A backend that cannot update from a select of the same table (MySQL) reads the keys
        # first and writes them into the statement: not one to keep.
        if connection.features.update_can_self_select:
            rows = model._default_manager.filter(**walk.where)
            if walk.unless:
                rows = rows.exclude(**walk.unless)
            query = rows.query.chain(UpdateQuery)
            walk.send_as_lookups_do(query.where)
            # django-stubs types chain() as giving a Query, not the class it is asked for.
            query.add_update_values(walk.values)  # type: ignore[attr-defined]
            query.clear_select_clause()
            try:
                sql, params = query.get_compiler(alias).as_sql()
            except EmptyResultSet:
                # It matches nothing whatever the values (an empty IN): the ORM says so.
                sql, params = "", ()
            places = tuple(
                tuple(
                    p for p, param in enumerate(params) if _same(param, convert(each, connection))
                )
                for each, convert in zip(walk.stand_ins, walk.converts, strict=True)
            )
            found = [p for positions in places for p in positions]
            if sql and all(places) and len(found) == len(set(found)):
                statement = _Statement(sql, tuple(params), places, tuple(walk.converts))
        _statements[key] = statement
        return statement


def _same(param: Any, predicted: Any) -> bool:
    if type(param) is not type(predicted):
        return False
    if param == predicted:
        return True
    # A wrapper the backend sends a value in (psycopg's Jsonb) compares by identity.
    inner = getattr(param, "obj", _MISSING)
    return inner is not _MISSING and inner == getattr(predicted, "obj", _MISSING)


def _kind(value: Any) -> type | None:
    """The stand-in kind of a value that is sent, or None for a constant of the shape."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int
    if isinstance(value, str):
        return str
    if isinstance(value, datetime):
        # The ORM would make a naive one aware (with a warning) first.
        if value.tzinfo is None:
            raise _Unprepared
        return datetime
    raise _Unprepared


class _Walk:
    """Goes through an update's values once: the shape's key, the values that are sent (in
    order), and, with ``rebuild``, the same ``where`` and ``values`` with stand-ins in their
    places, and how each is sent."""

    def __init__(self, model: type[models.Model], *, rebuild: bool) -> None:
        self.model = model
        self.rebuild = rebuild
        self.sent: list[Any] = []
        self.stand_ins: list[Any] = []
        self.converts: list[Convert] = []
        self.where: dict[str, Any] = {}
        self.unless: dict[str, Any] = {}
        self.values: dict[str, Any] = {}

    def shape(
        self, where: Mapping[str, Any], unless: Mapping[str, Any], values: Mapping[str, Any]
    ) -> Hashable:
        filters = tuple(
            (name, self._lookup(self.where, name, value)) for name, value in where.items()
        )
        excluded = tuple(
            (name, self._lookup(self.unless, name, value)) for name, value in unless.items()
        )
        sets = tuple((name, self._set(name, value)) for name, value in values.items())
        return filters, excluded, sets

    def _slot(self, value: Any, kind: type, convert: Callable[[Any], Convert]) -> Any:
        """A value that is sent: its stand-in, and how it is sent (``convert`` is given the
        stand-in; a lookup's is :meth:`send_as_lookups_do`'s to find)."""
        self.sent.append(value)
        if not self.rebuild:
            return None
        standing_in = _stand_in(kind, len(self.stand_ins))
        self.stand_ins.append(standing_in)
        self.converts.append(convert(standing_in))
        return standing_in

    def send_as_lookups_do(self, where: WhereNode) -> None:
        """Each lookup's value sent as its lookup sends it (an integer field's adapted by the
        backend, a relation's as its target field's), found by its stand-in."""
        for lookup in _lookups(where):
            if not isinstance(lookup, FieldGetDbPrepValueMixin):
                continue
            # django-stubs' mixin does not name the rhs of the lookups it is mixed into.
            rhs = lookup.rhs if lookup.get_db_prep_lookup_value_is_iterable else [lookup.rhs]  # type: ignore[attr-defined]
            for value in rhs:
                for i, standing_in in enumerate(self.stand_ins):
                    if _same(value, standing_in):
                        self.converts[i] = _lookup_sending(lookup)

    def _lookup(self, into: dict[str, Any], name: str, value: Any) -> Hashable:
        if isinstance(value, list | tuple | set | frozenset):
            # An IN of so many: each its own value (their order is the one sent).
            tokens, stand_ins = [], []
            for each in value:
                token, standing_in = self._lookup_value(each)
                tokens.append(token)
                stand_ins.append(standing_in)
            into[name] = stand_ins
            return ("in", tuple(tokens))
        token, into[name] = self._lookup_value(value)
        return token

    def _lookup_value(self, value: Any) -> tuple[Hashable, Any]:
        kind = _kind(value)
        if kind is None:
            return ("=", value), value
        # Sent by its kind unless its lookup is found (send_as_lookups_do).
        return kind.__name__, self._slot(value, kind, lambda _: _sending(kind))

    def _set(self, name: str, value: Any) -> Hashable:
        if hasattr(value, "resolve_expression"):
            token, self.values[name] = self._expression(value)
            return token
        field = self.model._meta.get_field(name)
        if hasattr(value, "prepare_database_save"):
            if not field.remote_field:
                raise _Unprepared  # the ORM says why
            value = value.prepare_database_save(field)
        if isinstance(value, dict | list) and isinstance(field, models.JSONField):
            kind: type | None = str  # any JSON value stands in: a word is one
        else:
            kind = _kind(value)
        if kind is None:
            self.values[name] = value
            return ("=", value)
        # A concrete field: the ORM refused a relation's other side above.
        self.values[name] = self._slot(value, kind, lambda _: field.get_db_prep_save)  # type: ignore[union-attr]
        return (kind.__name__, type(field).__name__)

    def _expression(self, expression: Any) -> tuple[Hashable, Any]:
        if isinstance(expression, F) and type(expression) is F:
            # django-stubs leaves out F's name.
            return ("F", expression.name), expression  # type: ignore[attr-defined]
        if type(expression) is Value:
            # An output field given (or worked out already) might send the value otherwise.
            if "output_field" in vars(expression):
                raise _Unprepared
            kind = _kind(expression.value)
            if kind is None:
                return ("Value", expression.value), expression
            # Sent as Value.as_sql sends it in an update: through the field it works out.
            standing_in = self._slot(
                expression.value, kind, lambda each: Value(each).output_field.get_db_prep_save
            )
            return ("Value", kind.__name__), Value(standing_in) if self.rebuild else None
        if isinstance(expression, CombinedExpression | Func) and "output_field" not in vars(
            expression
        ):
            extra = getattr(expression, "extra", {})
            parts = [self._expression(each) for each in expression.get_source_expressions()]
            rebuilt = None
            if self.rebuild:
                rebuilt = expression.copy()
                rebuilt.set_source_expressions([part for _, part in parts])
            token = (
                type(expression),
                getattr(expression, "connector", None),
                tuple(sorted((k, repr(v)) for k, v in extra.items())),
                tuple(token for token, _ in parts),
            )
            return token, rebuilt
        raise _Unprepared


def _stand_in(kind: type, index: int) -> Any:
    # A number within every integer field's range (one outside it compiles to another
    # statement: none, or all rows): here it cannot be mistaken for anything else, since
    # every number among an update's parameters is one of its values (constants are None and
    # booleans).
    if kind is int:
        return 32767 - index
    return stand_in(kind, index)


def _lookups(where: WhereNode) -> list[Any]:
    found = []
    for child in where.children:
        found.extend(_lookups(child) if isinstance(child, WhereNode) else [child])
    return found


def _lookup_sending(lookup: Any) -> Convert:
    """How ``lookup`` sends a value (``Lookup.get_prep_lookup``, then
    ``FieldGetDbPrepValueMixin.get_db_prep_lookup``)."""
    field = lookup.lhs.output_field
    prepare = field.get_prep_value if lookup.prepare_rhs else (lambda value: value)
    to_db = getattr(getattr(field, "target_field", None), "get_db_prep_value", None)
    to_db = to_db or field.get_db_prep_value
    return lambda value, connection: to_db(prepare(value), connection, prepared=True)


def _sending(kind: type) -> Convert:
    return lambda value, connection: sent_form(kind, value, connection)
