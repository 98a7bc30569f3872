"""What the benchmarks share: their command line's start (the module's docstring as its help, and `--json`), the
thread count each runs with, taken from OMP_NUM_THREADS (which each benchmark's command sets, and which it sets
before importing torch), and the line that says where its figures come from."""
from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

import torch


def bench_parser(doc: str, json_help: str) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as the help, and `--json PATH` (`json_help`: what goes there)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help=json_help)
    return parser


def use_omp_threads() -> None:
    """torch's intra-op threads: as many as OMP_NUM_THREADS says, so that the figures are read per thread count."""
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def machine_line() -> str:
    """torch's version, its threads, the machine's cores and architecture: the start of each table's heading."""
    return f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} cores, {platform.machine()}"
