"""bench/spending.py: where CPU time goes, by what spends it."""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db.backends.utils import CursorWrapper
from django.db.models.query import QuerySet
from django.db.models.sql.compiler import SQLCompiler
from django.template import Context, Template

from bench.spending import PARTS, Spending

pytestmark = pytest.mark.django_db


def _busy(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_each_part_is_what_its_place_spent_and_the_rest_is_the_thread_s() -> None:
    User = get_user_model()
    template = Template("{% for user in users %}{{ user.username }}{% endfor %}")
    spending = Spending()
    with spending.measuring({}):
        list(User.objects.filter(username__startswith="nobody").order_by("pk"))
        template.render(Context({"users": User.objects.filter(is_active=True)}))
        _busy(0.02)
    seconds = spending.seconds
    assert set(seconds) == set(PARTS)
    assert seconds["sql_compile"] > 0 and seconds["database"] > 0 and seconds["templates"] > 0
    assert seconds["orm"] > 0  # the filters built, the rows turned into users
    # The busy loop is none of the wrapped places: it is the rest.
    assert seconds["rest"] >= 0.02
    assert seconds["mcp_loop"] == seconds["live_loop"] == 0


def test_a_query_a_template_makes_is_counted_as_the_query_s() -> None:
    """Time goes to the innermost place that runs: a template that spends nearly all of its
    time in a slow query's compiling shows that time as compiling, not as the template's."""
    original = SQLCompiler.as_sql

    def slow_as_sql(self: SQLCompiler, *args: object, **kwargs: object) -> object:
        _busy(0.01)
        return original(self, *args, **kwargs)

    SQLCompiler.as_sql = slow_as_sql  # type: ignore[method-assign]
    try:
        spending = Spending()
        with spending.measuring({}):
            Template("{{ users|length }}").render(
                Context({"users": get_user_model().objects.all()})
            )
    finally:
        SQLCompiler.as_sql = original  # type: ignore[method-assign]
    assert spending.seconds["sql_compile"] >= 0.01
    assert spending.seconds["templates"] < spending.seconds["sql_compile"]


def test_a_loop_thread_s_time_is_read_from_its_own_clock() -> None:
    started = threading.Event()
    stop = threading.Event()

    def loop() -> None:
        started.set()
        while not stop.is_set():
            _busy(0.001)

    thread = threading.Thread(target=loop, name="busy-loop")
    thread.start()
    started.wait()
    spending = Spending()
    try:
        with spending.measuring({"mcp_loop": thread, "live_loop": None}):
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join()
    assert spending.seconds["mcp_loop"] > 0.01
    assert spending.seconds["live_loop"] == 0
    # Sleeping costs this thread next to nothing.
    assert spending.seconds["rest"] < spending.seconds["mcp_loop"]


def test_every_wrapper_is_taken_off_when_it_ends() -> None:
    compile_before, execute_before = SQLCompiler.as_sql, CursorWrapper._execute
    render_before, fetch_before = Template.render, QuerySet._fetch_all
    spending = Spending()
    with spending.measuring({}):
        assert SQLCompiler.as_sql is not compile_before
    assert SQLCompiler.as_sql is compile_before
    assert CursorWrapper._execute is execute_before
    assert Template.render is render_before
    assert QuerySet._fetch_all is fetch_before
    counted = dict(spending.seconds)
    list(get_user_model().objects.all())
    assert spending.seconds == counted  # nothing counted once it ended
