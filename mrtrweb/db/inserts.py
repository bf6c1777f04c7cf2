"""``obj.save()`` of a new row, its ``INSERT`` compiled once per model and database.

Every start writes a call, every parked round a round, every transition an event, and Django
builds and compiles each ``INSERT`` anew: the columns and placeholders of a forty-column row,
more CPU than the database takes to store it (docs/performance.md). :func:`insert`
does what ``obj.save()`` does for a new object (the ``pre_save`` and ``post_save`` signals, each
field's ``pre_save`` and ``get_db_prep_save``, the key read back with ``RETURNING``, the
object's ``_state``) but keeps the statement Django compiled the first time; after that only
the values are prepared.

The SQL is Django's own. A model whose statement is not one plain placeholder per column (a
field with a placeholder of its own, other than a binary one, or a database default, a parent
table, a returned column that needs converting), a value that is an expression, an object
that has its key already, or a backend that cannot return the key from an ``INSERT`` is saved
by the ORM: never written wrongly, only not faster.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from django.db import connections, models, router, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models.signals import post_save, pre_save
from django.db.models.sql import InsertQuery

__all__ = ["insert"]


@dataclass(frozen=True)
class _Insert:
    sql: str
    # The columns written, in the statement's order, and those read back (the key).
    fields: tuple[models.Field[Any, Any], ...]
    returning: tuple[models.Field[Any, Any], ...]


# (model, alias, vendor) -> the statement, or None for a model the ORM saves. Nothing of a
# connection is kept: the SQL and the model's fields only.
_statements: dict[tuple[Hashable, ...], _Insert | None] = {}
_MISSING = object()


def insert(obj: models.Model) -> None:
    """Save ``obj``, a new object, as ``obj.save()`` does: one ``INSERT``, its key set."""
    model = type(obj)
    if not obj._state.adding or obj.pk is not None:
        obj.save()
        return
    obj._prepare_related_fields_for_save(operation_name="save")
    using = router.db_for_write(model, instance=obj)
    connection = connections[using]
    key = (model, using, connection.vendor)
    statement = _statements.get(key, _MISSING)
    if statement is _MISSING:
        statement = _statements[key] = _compile(model, using)
    if statement is None:
        obj.save(using=using)
        return
    assert isinstance(statement, _Insert)
    pre_save.send(sender=model, instance=obj, raw=False, using=using, update_fields=None)
    values = [field.pre_save(obj, True) for field in statement.fields]
    if any(hasattr(value, "resolve_expression") for value in values):
        # An expression is compiled into the statement: Django's, with the signal sent once.
        _save_table(obj, using)
    else:
        params = [
            field.get_db_prep_save(value, connection)
            for field, value in zip(statement.fields, values, strict=True)
        ]
        # As save_base: an error inside an atomic block marks it for rollback.
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(statement.sql, params)
            row = cursor.fetchone()
        for value, field in zip(row, statement.returning, strict=True):
            setattr(obj, field.attname, value)
    obj._state.db = using
    obj._state.adding = False
    post_save.send(
        sender=model, instance=obj, created=True, update_fields=None, raw=False, using=using
    )


def _save_table(obj: models.Model, using: str) -> None:
    with transaction.mark_for_rollback_on_error(using):
        obj._save_table(cls=type(obj), force_insert=True, using=using)


def _plain_placeholder(field: models.Field[Any, Any], connection: Any) -> bool:
    """Whether ``field``'s value goes in as ``%s`` whatever it is: a field without a
    placeholder of its own, or a binary one (an encrypted token) on a backend that writes
    bytes as any value (SQLite, PostgreSQL; MySQL marks them, and differently for NULL)."""
    if not hasattr(field, "get_placeholder"):
        return True
    return (
        type(field).get_placeholder is models.BinaryField.get_placeholder
        and type(connection.ops).binary_placeholder_sql
        is BaseDatabaseOperations.binary_placeholder_sql
    )


def _compile(model: type[models.Model], using: str) -> _Insert | None:
    """Django's statement for a new ``model`` row, or None when :func:`insert` leaves it to
    the ORM."""
    meta = model._meta
    connection = connections[using]
    if meta.parents or meta.proxy or meta.auto_created or meta.order_with_respect_to:
        return None
    if not connection.features.can_return_columns_from_insert:
        return None
    fields = tuple(
        f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field
    )
    if any(f.has_db_default() or not _plain_placeholder(f, connection) for f in fields):
        return None
    returning = tuple(meta.db_returning_fields)
    query = InsertQuery(model)
    # Built from an object of the model's defaults: only the statement is kept, not the values.
    query.insert_values(fields, [model()], raw=False)
    compiler = query.get_compiler(using=using)
    compiler.returning_fields = list(returning)
    try:
        statements = compiler.as_sql()
    except Exception:  # a default its field cannot send: the ORM saves these
        return None
    if len(statements) != 1:
        return None
    sql, params = statements[0]
    if compiler.returning_params or len(params) != len(fields) or sql.count("%s") != len(fields):
        return None
    columns = [field.get_col(meta.db_table) for field in returning]
    if compiler.get_converters(columns):
        return None
    return _Insert(sql=sql, fields=fields, returning=returning)
