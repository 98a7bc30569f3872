"""What the embeddings page shows about a model's embedding tables, computed once per model (no Streamlit here)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bert.analysis.representations import embedding_subspaces
from bert.devices import as_numpy
from bert.model import Bert
from bert.tokenizer import BertTokenizer

SAMPLE_TOKENS = 1500  # vocabulary entries drawn in the token PCA scatter
SAMPLE_SEED = 0


@dataclass(frozen=True)
class EmbeddingTables:
    hidden: int
    token_variance: np.ndarray  # [components] share of the token table's variance per principal component
    position_variance: np.ndarray  # [components] the same for the position table
    token_pca_mean: np.ndarray  # [hidden], to project a sentence's token vectors
    token_pca_components: np.ndarray  # [2, hidden]
    sample_tokens: list[str]  # a fixed random sample of whole-word vocabulary entries
    sample_coords: np.ndarray  # [sample, 2] their coordinates along the first two components
    position_coords: np.ndarray  # [positions, 3] every position embedding along its table's first 3 components
    position_cosines: np.ndarray  # [positions, positions] cosine similarity between position embeddings
    segment_cosine: float  # cosine between the two segment embeddings (nan with a single segment)
    directions: dict[str, np.ndarray]  # part -> embedding_subspaces.singular_directions of its table [hidden, rank]


def weight_tables(model: Bert) -> dict[str, np.ndarray]:
    """"token", "position", "segment" -> the embedding weight matrices [rows, hidden], as float32 numpy."""
    embedding = model.embedding
    return {
        "token": as_numpy(embedding.token_embedding.weight),
        "position": as_numpy(embedding.position_embedding.weight),
        "segment": as_numpy(embedding.token_type_embedding.weight),
    }


def embedding_tables(model: Bert, vocabulary: list[str]) -> EmbeddingTables:
    tables = weight_tables(model)
    hidden = tables["token"].shape[1]
    token_pca = embedding_subspaces.pca(tables["token"], k=hidden)
    position_pca = embedding_subspaces.pca(tables["position"], k=hidden)
    sample = _whole_word_sample(vocabulary)
    segment = tables["segment"]
    segment_cosine = float(embedding_subspaces.cosine_similarity_matrix(segment[:2])[0, 1]) if len(segment) >= 2 else float("nan")
    return EmbeddingTables(
        hidden=hidden,
        token_variance=token_pca.explained_variance_ratio.astype(np.float32),
        position_variance=position_pca.explained_variance_ratio.astype(np.float32),
        token_pca_mean=token_pca.mean.astype(np.float32),
        token_pca_components=token_pca.components[:2].astype(np.float32),
        sample_tokens=[vocabulary[i] for i in sample],
        sample_coords=token_pca.project(tables["token"][sample])[:, :2].astype(np.float32),
        position_coords=position_pca.project(tables["position"])[:, :3].astype(np.float32),
        position_cosines=embedding_subspaces.cosine_similarity_matrix(tables["position"]).astype(np.float32),
        segment_cosine=segment_cosine,
        directions={part: embedding_subspaces.singular_directions(table).astype(np.float32) for part, table in tables.items()},
    )


def model_tables(model: Bert, tokenizer: BertTokenizer, vocab: int) -> EmbeddingTables:
    """`embedding_tables` with the vocabulary read from the tokenizer (its first `vocab` entries: the model's)."""
    vocabulary = [tokenizer.id_to_token(i) or "" for i in range(min(tokenizer.vocab_size, vocab))]
    return embedding_tables(model, vocabulary)


def table_subspaces(model: Bert, tables: EmbeddingTables, k: int) -> embedding_subspaces.SubspaceReport:
    """How the token, position and segment tables' top-`k` subspaces sit to one another (the embeddings page's
    angles and surviving norms), from the tables' singular directions."""
    return embedding_subspaces.subspace_report(weight_tables(model), k, directions=tables.directions)


def project_tokens(tables: EmbeddingTables, vectors: np.ndarray) -> np.ndarray:
    """[n, hidden] token embeddings -> [n, 2] in the token table's PCA plane."""
    return (np.asarray(vectors, dtype=np.float32) - tables.token_pca_mean) @ tables.token_pca_components.T


def _whole_word_sample(vocabulary: list[str]) -> np.ndarray:
    words = [i for i, token in enumerate(vocabulary) if token.isalpha() and token.isascii() and len(token) > 1]
    generator = np.random.default_rng(SAMPLE_SEED)
    return np.sort(generator.choice(words, size=min(SAMPLE_TOKENS, len(words)), replace=False))
