from tests.demo.fixtures import demo_server

__all__ = ["demo_server"]
