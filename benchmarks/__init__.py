"""Reproducible performance measurements: one `bench_<target>.py` per target of benchmarks/RESULTS.md.

Run one with `python -m benchmarks.bench_<name>`, or all with `make bench`. They
talk only to 127.0.0.1 and every loop is bounded.
"""
