"""mrtrweb's benchmarks: what a round costs, against the floor, measured in one run.

Entry point: ``python -m bench`` (``make bench``); see :mod:`bench.run` and
docs/performance.md.
"""
