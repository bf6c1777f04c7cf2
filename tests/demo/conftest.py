from tests.demo.fixtures import demo_server, inline_tasks

__all__ = ["demo_server", "inline_tasks"]
