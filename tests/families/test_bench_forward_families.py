"""`python -m bench.forward --family modernbert|deberta-v2` end to end on a tiny model of the family (the hidden
--tiny: bench/make_random_bert.py's tiny_fields): the random checkpoint loads in bert.load_pretrained and in
transformers' Auto classes, every configuration of the recorded and plain tables runs (ours on the app's path with
viz_app.app.forward.recorded_hooks, DeBERTa's patterns included), and the output says which reference is eager. No
timing is asserted: the measurement itself is docs/benchmarks.md's."""
from __future__ import annotations

import json

import pytest

from bert_test_support import run_bench

CONFIGURATIONS = {"recorded": ["ours_full", "ours_app", "transformers_eager"],
                  "plain": ["ours_eager", "ours_sdpa", "transformers_sdpa"]}


@pytest.mark.slow
@pytest.mark.parametrize("family", ["modernbert", "deberta-v2"])
def test_forward_benchmark_runs_the_family(family, tmp_path):
    record = tmp_path / "forward.json"
    # 512 tokens: longer than ModernBERT's 128-token window, so its local layers mask
    result = run_bench("forward", "--family", family, "--tiny", "--threads", "1", "--repeats", "1", "--no-memory",
                       "--parts", "recorded", "plain", "--shapes", "1x16", "1x512", "--json", str(record), timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    results = json.loads(record.read_text())["results"]
    assert set(results) == set(CONFIGURATIONS)
    for part, names in CONFIGURATIONS.items():
        assert set(results[part]) == {"1x16", "1x512"}
        for shape in results[part].values():
            assert sorted(shape["times"]) == sorted(names)
            assert all(len(times) == 1 and times[0] > 0 for times in shape["times"].values())
    assert f"{family}-base;" in result.stdout and "TINY model" in result.stdout
    eager_note = "its plain reference (transformers_sdpa) is eager attention"
    assert (eager_note in result.stdout) == (family == "deberta-v2")
