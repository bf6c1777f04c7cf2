"""What the calls app's models share, in a module of its own so that every model module of
``calls.models`` (``calls_and_rounds``, ``event``, ``round_part``, ``vote``) imports it without
importing the others."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


def where_set(field: str, name: str, *more: str) -> models.Index:
    """An index on ``field`` (then ``more``) holding only the rows where it is set: the
    column is NULL on most rows (a round's assignee and group: on the rounds routed the other
    way), and those entries would cost every parked round a few bytes for lookups that never
    ask for NULL."""
    return models.Index(
        fields=[field, *more], name=name, condition=models.Q(**{f"{field}__isnull": False})
    )


def assignment(asked: str) -> type[models.Model]:
    """The abstract base of what is asked of people, a round and a split round's part: who
    is asked (see calls.access.routing: one user, or a group whose members claim it) and who
    answered. ``asked`` is what a person and a group call them, ``user.assigned_<asked>``,
    ``user.answered_<asked>``: a parameter because the names predate the base ("parts", not
    the "roundparts" Django's ``%(class)s`` would make), and renaming them would be a
    migration. None of the three is indexed alone: each model's ``Meta`` indexes them beside
    ``status`` (assigned_*), and only where set (answered_by), under its own index names."""

    class Assignment(models.Model):
        assigned_user = models.ForeignKey(
            settings.AUTH_USER_MODEL,
            null=True,
            blank=True,
            on_delete=models.SET_NULL,
            related_name=f"assigned_{asked}",
            db_index=False,
        )
        assigned_group = models.ForeignKey(
            Group,
            null=True,
            blank=True,
            on_delete=models.SET_NULL,
            related_name=f"assigned_{asked}",
            db_index=False,
        )
        # NULL until answered.
        answered_by = models.ForeignKey(
            settings.AUTH_USER_MODEL,
            null=True,
            blank=True,
            on_delete=models.SET_NULL,
            related_name=f"answered_{asked}",
            db_index=False,
        )

        class Meta:
            abstract = True

    return Assignment
