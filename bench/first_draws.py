"""How long each page takes to draw the first time, with the built-in model, beside one transformers forward pass.

    OMP_NUM_THREADS=1 python -m bench.first_draws                         # every page of the registry
    OMP_NUM_THREADS=1 python -m bench.first_draws --pages embeddings features compare_models --json out/first.json

The model is loaded and the app's Home.py run once on its default page (warm-up, not timed). Then each page of the
registry (viz_app/app/navigation.py) is opened by a new visitor (a new AppTest session: the person at the server's
machine) on its link with no parameters, as a teacher opens it from the sidebar: its first run is timed (wall and CPU
seconds of the whole process: the page's script, its computations and Streamlit's own work), the first open of that
page since the process started, so its imports and its computations' caches are cold (the default sentence's one
recorded pass is shared with the warm-up, as it is on a server). A second visitor then opens the same page (warm
caches). Before each page, in the same process, a transformers BertForMaskedLM shaped like the model (random weights:
speed does not depend on them; eager attention, output_attentions=True) runs one forward pass on the default
sentence: each page's ratio to it is what to compare across machines and loads, since the wall times depend on what
else the machine runs (the load average is printed with each row). AppTest measures the server's side only: a
browser's drawing of the charts comes on top. AppTest scans every installed package for Streamlit components once per
new AppTest (0.3 s of CPU here, 1 s and more of wall time on a loaded machine), which a server does once at its start:
the bench scans once and keeps the result. Target: at most 5 s for every page's first draw on a 2-core machine.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from bench.make_random_bert import reference_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "viz_app" / "Home.py"
TARGET_S = 5.0


def timed(run) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def open_page(url_path: str | None, page_file: str | None):
    """A new visitor's AppTest, run once on `page_file` (the default page when None); returns (at, wall, cpu)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(HOME), default_timeout=900)
    if page_file:
        at.switch_page(f"../pages/{page_file}")
    wall, cpu = timed(at.run)
    return at, wall, cpu


def shown(at) -> str:
    """What the first screen holds, in a few words: its charts and tables, or its first message."""
    charts = len(at.get("plotly_chart")) + len(at.get("vega_lite_chart"))
    tables = len(at.get("dataframe")) + len(at.get("table"))
    if at.exception:
        return f"exception: {str(at.exception[0].value)[:60]}"
    problems = [e.value for kind in ("error", "warning") for e in at.get(kind)]
    note = f"; {kind_first(problems)}" if problems else ""
    return f"{charts} charts, {tables} tables{note}"


def kind_first(messages: list) -> str:
    return str(messages[0]).replace("\n", " ")[:70]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", nargs="+", help="url paths (default: every page of the registry)")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

    from viz_app.app import models
    from viz_app.app.navigation import PAGES
    from viz_app.app.url_params import DEFAULT_TEXT
    from viz_app.server import visitor

    visitor.address = lambda: "127.0.0.1"  # AppTest has no connection: play the person at the server's machine
    loaded = models.load(models.ModelKey.of(models.default_source()))
    reference = reference_for(loaded.model.config)
    ids, types = loaded.tokenizer.encode(DEFAULT_TEXT).tensors()
    warm, warm_wall, _ = open_page(None, None)
    if warm.exception:
        print(warm.exception[0].value, file=sys.stderr)
        return 1
    print(f"warm-up (model load, imports, the default page): {warm_wall:.2f} s", flush=True)

    rows = []
    for url_path in args.pages or list(PAGES):
        page = PAGES[url_path]
        with torch.inference_mode():
            forward_s = min(timed(lambda: reference(input_ids=ids, token_type_ids=types, output_attentions=True))[0]
                            for _ in range(3))
        load = os.getloadavg()[0]
        first, first_wall, first_cpu = open_page(url_path, page.file)
        _, second_wall, _ = open_page(url_path, page.file)
        row = {"page": url_path, "title": page.title, "first_s": first_wall, "first_cpu_s": first_cpu,
               "second_s": second_wall, "forward_s": forward_s, "ratio": first_wall / forward_s,
               "load_average": load, "shown": shown(first)}
        rows.append(row)
        print(f"| {page.title} | {first_wall:.2f} | {first_cpu:.2f} | {second_wall:.2f} | {forward_s * 1000:.0f} "
              f"| {first_wall / forward_s:.0f} | {load:.1f} | {row['shown']} |"
              f"{' **over 5 s**' if first_wall > TARGET_S else ''}", flush=True)

    load = os.getloadavg()
    print(f"\nmodel {models.default_source()}; {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {platform.processor() or platform.machine()}")
    print("| page | first draw, wall (s) | its CPU (s) | a second visitor, wall (s) | transformers forward (ms) "
          "| first draw / forward | load average (1 min) | first screen |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        print(f"| {row['title']} | {row['first_s']:.2f} | {row['first_cpu_s']:.2f} | {row['second_s']:.2f} "
              f"| {row['forward_s'] * 1000:.0f} | {row['ratio']:.0f} | {row['load_average']:.1f} | {row['shown']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average_end": load, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
