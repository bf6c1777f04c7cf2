"""Helpers shared by the tests that run the app as real processes (browser, faults, scale-out,
the live API) and by the service smoke tests: public, so no test package imports another's
conftest for them."""
