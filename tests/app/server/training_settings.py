"""The tests' two tiny training runs (bert/pretraining/miniature.py's TinySettings): LONG lasts far longer than a
test takes to reach the point it checks on a loaded machine, so its test stops it (a stopped run is what those
tests look at); QUICK finishes in a few seconds."""
from bert.pretraining.miniature import TinySettings

LONG = TinySettings(layers=1, hidden=32, heads=2, steps=200_000, batch_size=8, eval_every=50_000, eval_batches=1)
QUICK = TinySettings(layers=1, hidden=32, heads=2, steps=4, batch_size=8, eval_every=2, eval_batches=1, warmup_steps=1)
