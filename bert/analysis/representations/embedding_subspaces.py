"""Do the token, position and segment embeddings split the hidden space like a concatenation, or overlap?

BERT sums the three embeddings, which can act exactly like a concatenation if the model learns to use only a set
fraction of the dimensions for each, in some rotated basis (the hidden dimensions
are not a privileged basis). These functions measure it, on one sentence and on the embedding tables:

- `decompose`: each token's summed input embedding split into its three parts, with norms and cosines.
  Under a concatenation every cosine between parts would be 0.
- `pca`, `cosine_similarity_matrix`: the shape of one table (how many directions it uses; how similar
  neighbouring positions are).
- `singular_directions`, `top_subspace`, `principal_angles`, `surviving_fraction`, `subspace_report`:
  compare the subspaces the tables span. Principal angles near 90 degrees and little norm surviving
  projection onto another table's subspace mean "separate subspaces" (concatenation-like); small angles
  mean shared directions.

Axes: rows (vocabulary entries, positions or segments of a table; tokens of a sentence), hidden.
Everything is numpy; tables are the models' weight matrices [rows, hidden].
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError

PARTS = ("token", "position", "segment")
PAIRS = tuple(itertools.combinations(PARTS, 2))  # (token, position), (token, segment), (position, segment)


@dataclass(frozen=True)
class Decomposition:
    """One sentence's input embeddings (before LayerNorm) as token + position + segment.

    norms: "token", "position", "segment", "sum" -> [seq]
    cosines: (part, part) for each pair in PAIRS -> [seq]
    cross_share: [seq], (|sum|^2 - sum of |part|^2) / |sum|^2: the share of the summed vector's squared norm
        that comes from the parts' overlap. 0 when the parts are orthogonal, as under a concatenation.
    """

    norms: dict[str, np.ndarray]
    cosines: dict[tuple[str, str], np.ndarray]
    cross_share: np.ndarray


def decompose(token: np.ndarray, position: np.ndarray, segment: np.ndarray) -> Decomposition:
    """token, position, segment: [seq, hidden] each, e.g. embedding.hook_token / hook_position / hook_token_type."""
    parts = {"token": _as_2d(token), "position": _as_2d(position), "segment": _as_2d(segment)}
    shapes = {p.shape for p in parts.values()}
    if len(shapes) != 1:
        raise InvalidInputError(f"token, position and segment must have the same shape [seq, hidden], got {shapes}")
    summed = parts["token"] + parts["position"] + parts["segment"]
    norms = {name: np.linalg.norm(vectors, axis=-1) for name, vectors in parts.items()}
    norms["sum"] = np.linalg.norm(summed, axis=-1)
    cosines = {(a, b): _row_cosines(parts[a], parts[b]) for a, b in PAIRS}
    squares = sum(norms[name] ** 2 for name in PARTS)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross_share = np.where(norms["sum"] > 0, (norms["sum"] ** 2 - squares) / norms["sum"] ** 2, 0.0)
    return Decomposition(norms, cosines, cross_share)


def cosine_similarity_matrix(rows: np.ndarray) -> np.ndarray:
    """[n, hidden] -> [n, n]: cosine between every pair of rows (0 for a zero row)."""
    rows = _as_2d(rows)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    unit = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return unit @ unit.T


@dataclass(frozen=True)
class PCA:
    """Principal components of a table's rows (centred on their mean)."""

    mean: np.ndarray  # [hidden]
    components: np.ndarray  # [k, hidden], orthonormal rows, largest variance first
    explained_variance_ratio: np.ndarray  # [k], share of the total variance along each component

    def project(self, rows: np.ndarray) -> np.ndarray:
        """[n, hidden] -> [n, k] coordinates along the components."""
        return (_as_2d(rows) - self.mean) @ self.components.T


def pca(table: np.ndarray, k: int) -> PCA:
    """The top-k principal components of the rows of `table` [rows, hidden] (k is capped at hidden)."""
    table = _as_2d(table)
    mean = table.mean(axis=0)
    singular, vt = _right_singular(table - mean)
    variance = singular**2
    total = variance.sum()
    ratio = variance / total if total > 0 else np.zeros_like(variance)
    k = min(k, vt.shape[0])
    return PCA(mean, _fix_signs(vt[:k]), ratio[:k])


def singular_directions(table: np.ndarray, center: bool = False) -> np.ndarray:
    """Every direction the rows of `table` [rows, hidden] span, as an orthonormal basis [hidden, rank]: the
    right singular vectors with a non-zero singular value, largest first. Its first k columns are `top_subspace`.
    center=False keeps the rows' common mean direction, which is part of what gets added to the sum."""
    table = _as_2d(table)
    if center:
        table = table - table.mean(axis=0)
    singular, vt = _right_singular(table)
    rank = int((singular > singular.max(initial=0) * _RANK_TOLERANCE).sum())
    return vt[:rank].T


def top_subspace(table: np.ndarray, k: int, center: bool = False) -> np.ndarray:
    """An orthonormal basis [hidden, k'] of the k-dimensional subspace that best holds the rows of `table`:
    its top-k right singular vectors. k' = min(k, rank), so a 2-row segment table gives at most 2 directions."""
    return singular_directions(table, center)[:, :k]


def principal_angles(basis_a: np.ndarray, basis_b: np.ndarray) -> np.ndarray:
    """Principal angles in radians, smallest first, between the column spaces of two orthonormal bases
    [hidden, ka] and [hidden, kb]: min(ka, kb) angles, 0 = a shared direction, pi/2 = orthogonal."""
    if basis_a.shape[0] != basis_b.shape[0]:
        raise InvalidInputError(f"bases live in different spaces: {basis_a.shape[0]} vs {basis_b.shape[0]} dimensions")
    if basis_a.shape[1] == 0 or basis_b.shape[1] == 0:
        return np.zeros(0)
    cosines = np.linalg.svd(basis_a.T @ basis_b, compute_uv=False)
    return np.arccos(np.clip(cosines, -1.0, 1.0))


def surviving_fraction(vectors: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """|P x| / |x| for each row x of `vectors` [n, hidden], P the projection onto the orthonormal `basis`
    [hidden, k]: 1 = x lies in the subspace, 0 = orthogonal to it (0 for a zero vector)."""
    vectors = _as_2d(vectors)
    norms = np.linalg.norm(vectors, axis=-1)
    projected = np.linalg.norm(vectors @ basis, axis=-1)  # |B^T x| = |B B^T x| for orthonormal B
    return np.divide(projected, norms, out=np.zeros_like(norms), where=norms > 0)


def random_fraction(hidden: int, k: int) -> float:
    """sqrt(k / hidden): about how much of a random direction survives projection onto a k-dim subspace."""
    return float(np.sqrt(min(k, hidden) / hidden))


def random_subspace_angles(hidden: int, k_a: int, k_b: int, seed: int = 0) -> np.ndarray:
    """Principal angles between two random subspaces of these sizes: the baseline for "unrelated"."""
    generator = np.random.default_rng(seed)
    basis_a = np.linalg.qr(generator.standard_normal((hidden, k_a)))[0]
    basis_b = np.linalg.qr(generator.standard_normal((hidden, k_b)))[0]
    return principal_angles(basis_a, basis_b)


@dataclass(frozen=True)
class SubspaceReport:
    """How the top-k subspaces of the token, position and segment tables relate.

    dims: part -> dimensions of its subspace (k, or fewer when the table has fewer rows)
    angles: (part, part) for each pair in PAIRS -> principal angles in degrees, smallest first
    random_angles: the same pairs for random subspaces of the same sizes, in degrees
    surviving: (part, onto) -> mean over the part's table rows of |P_onto x| / |x|
    random_surviving: onto -> random_fraction(hidden, dims[onto])
    """

    dims: dict[str, int]
    angles: dict[tuple[str, str], np.ndarray]
    random_angles: dict[tuple[str, str], np.ndarray]
    surviving: dict[tuple[str, str], float]
    random_surviving: dict[str, float]


def subspace_report(
    tables: dict[str, np.ndarray],
    k: int,
    center: bool = False,
    seed: int = 0,
    directions: dict[str, np.ndarray] | None = None,
) -> SubspaceReport:
    """tables: "token", "position", "segment" -> [rows, hidden] (the embedding weight matrices).
    directions: each table's `singular_directions(table, center)` if already computed (the SVD of a
    30k-row token table takes a while; then trying several k is cheap)."""
    missing = set(PARTS) - set(tables)
    if missing:
        raise InvalidInputError(f"tables needs {sorted(missing)} as well")
    hidden = _as_2d(tables["token"]).shape[1]
    directions = directions or {name: singular_directions(tables[name], center) for name in PARTS}
    bases = {name: np.asarray(directions[name], dtype=np.float64)[:, :k] for name in PARTS}
    dims = {name: bases[name].shape[1] for name in PARTS}
    angles = {(a, b): np.degrees(principal_angles(bases[a], bases[b])) for a, b in PAIRS}
    random_angles = {(a, b): np.degrees(random_subspace_angles(hidden, dims[a], dims[b], seed)) for a, b in PAIRS}
    surviving = {
        (part, onto): float(surviving_fraction(tables[part], bases[onto]).mean()) for part in PARTS for onto in PARTS
    }
    random_surviving = {onto: random_fraction(hidden, dims[onto]) for onto in PARTS}
    return SubspaceReport(dims, angles, random_angles, surviving, random_surviving)


_RANK_TOLERANCE = 1e-6  # singular values below this share of the largest count as zero (noise, not a direction)


def _right_singular(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(singular values, largest first; right singular vectors as rows). A tall table (a 30k-word vocabulary)
    goes through the eigenvectors of its small [hidden, hidden] Gram matrix, several times faster than an SVD
    of the whole table and as accurate for the leading directions; others through the SVD itself."""
    rows, columns = table.shape
    if rows <= 2 * columns:
        _, singular, vt = np.linalg.svd(table, full_matrices=False)
        return singular, vt
    eigenvalues, vectors = np.linalg.eigh(table.T @ table)
    order = np.argsort(eigenvalues)[::-1]
    return np.sqrt(np.clip(eigenvalues[order], 0, None)), vectors[:, order].T


def _as_2d(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array, dtype=np.float64)
    if array.ndim != 2:
        raise InvalidInputError(f"expected a [rows, hidden] array, got shape {array.shape}")
    return array


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide((a * b).sum(axis=-1), norms, out=np.zeros(len(a)), where=norms > 0)


def _fix_signs(components: np.ndarray) -> np.ndarray:
    """SVD signs are arbitrary; make each component's largest-magnitude entry positive, so plots are stable."""
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    return components * np.where(signs == 0, 1, signs)[:, None]
