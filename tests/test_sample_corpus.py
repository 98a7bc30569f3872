"""recipes/sample_corpus.py: a reproducible uniform sample of a corpus's lines, in file order."""
import collections
import importlib.util
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "sample_corpus.py"
spec = importlib.util.spec_from_file_location("sample_corpus", RECIPE)
sample_corpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sample_corpus)


def test_a_sample_is_distinct_lines_in_file_order_and_the_same_for_the_same_seed(tmp_path):
    corpus = tmp_path / "train.txt"
    corpus.write_text("".join(f"line {i}\n" + ("\n" if i % 7 == 0 else "") for i in range(100)))
    sample = sample_corpus.sample_lines(corpus, 10, seed=3)
    numbers = [int(line.split()[1]) for line in sample]
    assert len(set(numbers)) == 10 and numbers == sorted(numbers)
    assert sample == sample_corpus.sample_lines(corpus, 10, seed=3) != sample_corpus.sample_lines(corpus, 10, seed=4)
    assert sample_corpus.sample_lines(corpus, 500) == [f"line {i}" for i in range(100)]  # blank lines skipped


def test_every_line_is_equally_likely(tmp_path):
    corpus = tmp_path / "train.txt"
    corpus.write_text("".join(f"{i}\n" for i in range(20)))
    counts = collections.Counter(line for seed in range(2000) for line in sample_corpus.sample_lines(corpus, 5, seed))
    assert set(counts) == {str(i) for i in range(20)}
    assert all(abs(count - 500) < 100 for count in counts.values())  # 2000 * 5 / 20 = 500 each; sd about 19
