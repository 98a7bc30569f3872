"""A corpus index on disk: a folder of vectors.safetensors, entries.parquet, sentences.parquet and index.json
(nothing in it can run code); shards from a `torchrun` job are such folders, joined in rank order.

Below bert/analysis/corpus/corpus_search.py, which it does not import: it reads an index's attributes to write it, and
gives back the fields of a CorpusIndex (entries as columns) for corpus_search to build one from."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from safetensors.torch import load_file, save_file

from ...errors import CorpusIndexError, StaleIndexError

FORMAT = "bert-inside corpus index"
VERSION = 2  # 2: head keys count layers from 0 (bert/layers.py); 1 counted them from 1
PARTS = ("index.json", "vectors.safetensors", "entries.parquet", "sentences.parquet")
ENTRY_TYPES = {"sentence_index": pa.int32(), "position": pa.int32(), "token": pa.string(), "word": pa.string(),
               "part_of_speech": pa.string()}


def save_index(index, folder: Path) -> Path:
    """Write a CorpusIndex into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file({_tensor_name(key): index.vectors[key].contiguous() for key in index.keys}, folder / "vectors.safetensors")
    entries = pa.table({name: pa.array(getattr(index.entries, name), type=kind) for name, kind in ENTRY_TYPES.items()})
    pq.write_table(entries, folder / "entries.parquet")
    pq.write_table(pa.table({"text": pa.array(index.sentences, type=pa.string())}), folder / "sentences.parquet")
    meta = dict(format=FORMAT, version=VERSION, fingerprint=index.fingerprint, layers=list(index.layers),
                heads=[list(pair) for pair in index.heads], rows=len(index), hidden_size=index.hidden_size,
                shard=list(index.shard) if index.shard else None)
    (folder / "index.json").write_text(json.dumps(meta, indent=1) + "\n")  # written last: its presence means complete
    return folder


def read_index(path: Path) -> dict | list[dict]:
    """The fields of the index in `path` (a dict), or of each shard (a list) when its subfolders are the shards of
    one job."""
    if not path.is_dir():
        raise CorpusIndexError(f"{path} is not a folder; give the folder that `save` or `python -m bert index` wrote")
    if (path / "index.json").is_file():
        return _read_one(path)
    shards = sorted(p for p in path.iterdir() if (p / "index.json").is_file())
    if not shards:
        raise CorpusIndexError(f"{path} holds no corpus index (no index.json in it or in its subfolders)")
    return [_read_one(p) for p in shards]


def join_shards(shards: list) -> dict:
    """The fields of one index made of the shards (CorpusIndex objects) of one job: same model and layers,
    ranks 0 .. world - 1 each once."""
    if not shards:
        raise CorpusIndexError("no shards given")
    first = shards[0]
    for shard in shards:
        if (shard.fingerprint, shard.keys) != (first.fingerprint, first.keys):
            raise CorpusIndexError("the shards were built with different models, layers or heads; rebuild them in one job")
    _check_ranks(shards)
    shards = sorted(shards, key=lambda s: s.shard[0])
    offsets = [0]
    for shard in shards:
        offsets.append(offsets[-1] + len(shard.sentences))
    columns = {name: [] for name in ENTRY_TYPES}
    for shard, offset in zip(shards, offsets):
        columns["sentence_index"] += [i + offset for i in shard.entries.sentence_index]
        for name in ("position", "token", "word", "part_of_speech"):
            columns[name] += getattr(shard.entries, name)
    return dict(
        sentences=[text for shard in shards for text in shard.sentences],
        layers=first.layers,
        entries=columns,
        vectors={key: torch.cat([s.vectors[key] for s in shards]) for key in first.keys},
        fingerprint=first.fingerprint,
        heads=first.heads,
    )


def _check_ranks(shards: list) -> None:
    ranks = sorted((s.shard or (None, None)) for s in shards)
    world = ranks[0][1]
    if world is None or ranks != [(rank, world) for rank in range(world)]:
        raise CorpusIndexError(f"the shards are ranks {[r for r, _ in ranks]} but a whole job has ranks 0 .. {world}-1")


def check_fingerprint(saved: str, current: str) -> None:
    if saved != current:
        raise StaleIndexError(
            f"this corpus index was built with another model (fingerprint {saved}, this model's is {current}): "
            "its vectors would not match; rebuild it for this model (python -m bert index --model ... --out ...)"
        )


def _read_one(folder: Path) -> dict:
    missing = [part for part in PARTS if not (folder / part).is_file()]
    if missing:
        raise CorpusIndexError(f"{folder} lacks {', '.join(missing)}: it is not a complete corpus index")
    try:
        meta = json.loads((folder / "index.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise CorpusIndexError(f"{folder}/index.json is not a version-{VERSION} {FORMAT}: build it again (python -m bert index)")
        tensors = load_file(folder / "vectors.safetensors")
        columns = pq.read_table(folder / "entries.parquet").to_pydict()
        sentences = pq.read_table(folder / "sentences.parquet").column("text").to_pylist()
        layers = tuple(int(layer) for layer in meta["layers"])
        heads = tuple((int(layer), int(head)) for layer, head in meta.get("heads", []))
        return dict(
            sentences=sentences,
            layers=layers,
            entries={name: columns[name] for name in ENTRY_TYPES},
            vectors={key: tensors[_tensor_name(key)] for key in layers + heads},
            fingerprint=meta["fingerprint"],
            shard=tuple(meta["shard"]) if meta.get("shard") else None,
            heads=heads,
        )
    except CorpusIndexError:
        raise
    except Exception as error:  # a truncated or foreign file: say which folder, keep the cause
        raise CorpusIndexError(f"{folder} could not be read as a corpus index: {error}") from error


def _tensor_name(key) -> str:
    """layer_3, or layer_3_head_5 for head 5's output in layer 3."""
    return f"layer_{key[0]}_head_{key[1]}" if isinstance(key, tuple) else f"layer_{key}"
