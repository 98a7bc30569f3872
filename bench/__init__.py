"""Benchmarks: each module measures one thing and prints a table ready for docs/benchmarks.md. Run them from the
repository root as modules, e.g. `OMP_NUM_THREADS=1 python -m bench.forward`; each module's docstring gives its
commands and what it measures."""
