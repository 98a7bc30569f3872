"""Embedding-subspace maths against hand-computed cases and independent numpy/scipy references."""
import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.spatial.distance import cdist

from bert.analysis.representations import embedding_subspaces


def basis(*columns) -> np.ndarray:
    return np.linalg.qr(np.array(columns, dtype=float).T)[0]


def test_principal_angles_of_known_subspaces():
    e = np.eye(4)
    # span(e1, e2) vs span(e1, e3): one shared direction, one orthogonal
    np.testing.assert_allclose(embedding_subspaces.principal_angles(basis(e[0], e[1]), basis(e[0], e[2])),
                               [0, np.pi / 2], atol=1e-12)
    # a line at 45 degrees to the plane's e1, out of the plane
    angles = embedding_subspaces.principal_angles(basis(e[0], e[1]), basis(e[0] + e[2]))
    np.testing.assert_allclose(angles, [np.pi / 4])
    # the same plane, two different bases
    np.testing.assert_allclose(embedding_subspaces.principal_angles(basis(e[0], e[1]), basis(e[0] + e[1], e[0] - e[1])),
                               [0, 0], atol=1e-7)


def test_principal_angles_match_scipy():
    rng = np.random.default_rng(1)
    for ka, kb in [(3, 5), (5, 3), (1, 1), (7, 7)]:
        a = np.linalg.qr(rng.standard_normal((20, ka)))[0]
        b = np.linalg.qr(rng.standard_normal((20, kb)))[0]
        ours = embedding_subspaces.principal_angles(a, b)
        reference = np.sort(subspace_angles(a, b))  # scipy returns them largest first
        np.testing.assert_allclose(ours, reference, atol=1e-10)


def test_top_subspace_finds_the_plane_the_rows_live_in():
    rng = np.random.default_rng(2)
    plane = basis([1, 1, 0, 0, 0], [0, 0, 1, 0, 1])
    rows = rng.standard_normal((50, 2)) @ plane.T  # 50 vectors inside the plane
    found = embedding_subspaces.top_subspace(rows, k=5)
    assert found.shape == (5, 2)  # rank 2: never more directions than the rows span
    np.testing.assert_allclose(embedding_subspaces.principal_angles(found, plane), [0, 0], atol=1e-7)
    np.testing.assert_allclose(found.T @ found, np.eye(2), atol=1e-12)


def test_tall_and_wide_tables_agree_with_numpy_svd():
    """Tall tables go through the Gram matrix, wide ones through an SVD: both must match numpy's SVD."""
    rng = np.random.default_rng(7)
    for shape in [(300, 10), (4, 10)]:
        table = rng.standard_normal(shape) * np.linspace(3, 0.5, shape[1])
        _, singular, vt = np.linalg.svd(table, full_matrices=False)
        found = embedding_subspaces.singular_directions(table)
        assert found.shape == (10, min(shape))
        for k in (1, 3):
            np.testing.assert_allclose(embedding_subspaces.principal_angles(found[:, :k], vt[:k].T), 0, atol=1e-6)


def test_surviving_fraction_by_hand():
    e = np.eye(3)
    x = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(embedding_subspaces.surviving_fraction(x, basis(e[0])), [0.6, 0.0, 0.0])
    np.testing.assert_allclose(embedding_subspaces.surviving_fraction(x, basis(e[0], e[1])), [1.0, 0.0, 0.0])
    assert embedding_subspaces.random_fraction(384, 16) == pytest.approx(np.sqrt(16 / 384))


def test_decompose_by_hand():
    token = np.array([[1.0, 0, 0], [1.0, 1.0, 0]])
    position = np.array([[0, 2.0, 0], [1.0, 1.0, 0]])
    segment = np.array([[0, 0, 0], [0, 0, 3.0]])
    parts = embedding_subspaces.decompose(token, position, segment)
    np.testing.assert_allclose(parts.norms["token"], [1, np.sqrt(2)])
    np.testing.assert_allclose(parts.norms["sum"], [np.sqrt(5), np.sqrt(4 + 4 + 9)])
    np.testing.assert_allclose(parts.cosines[("token", "position")], [0, 1])
    np.testing.assert_allclose(parts.cosines[("token", "segment")], [0, 0])  # a zero vector gives 0, not nan
    # token 0: orthogonal parts, no overlap; token 1: |sum|^2 = 17, parts 2 + 2 + 9 = 13
    np.testing.assert_allclose(parts.cross_share, [0, 4 / 17], atol=1e-12)


def test_cosine_matrix_matches_scipy():
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((6, 4))
    np.testing.assert_allclose(embedding_subspaces.cosine_similarity_matrix(rows), 1 - cdist(rows, rows, "cosine"), atol=1e-12)


def test_pca_matches_the_covariance_eigendecomposition():
    rng = np.random.default_rng(4)
    table = rng.standard_normal((200, 5)) * [5, 3, 2, 1, 0.5] + 7  # offset: PCA must centre
    result = embedding_subspaces.pca(table, k=3)
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(table, rowvar=False))
    order = np.argsort(eigenvalues)[::-1]
    np.testing.assert_allclose(result.explained_variance_ratio, (eigenvalues[order] / eigenvalues.sum())[:3], rtol=1e-10)
    for component, reference in zip(result.components, eigenvectors[:, order[:3]].T):
        assert abs(component @ reference) == pytest.approx(1.0)  # same direction up to sign
    projected = result.project(table)
    assert projected.shape == (200, 3)
    np.testing.assert_allclose(projected.mean(axis=0), 0, atol=1e-10)


def test_report_on_a_concatenation_and_on_shared_directions():
    """Tables built as a concatenation (disjoint coordinates) give 90 degrees and nothing surviving;
    a segment table inside the token subspace gives 0 degrees and everything surviving."""
    rng = np.random.default_rng(5)
    hidden = 12
    token = np.zeros((40, hidden)); token[:, :6] = rng.standard_normal((40, 6))
    position = np.zeros((20, hidden)); position[:, 6:10] = rng.standard_normal((20, 4))
    segment = np.zeros((2, hidden)); segment[:, 10:] = rng.standard_normal((2, 2))
    report = embedding_subspaces.subspace_report({"token": token, "position": position, "segment": segment}, k=6)
    assert report.dims == {"token": 6, "position": 4, "segment": 2}
    for pair in embedding_subspaces.PAIRS:
        np.testing.assert_allclose(report.angles[pair], 90.0, atol=1e-6)
    assert report.surviving[("token", "position")] == pytest.approx(0.0, abs=1e-12)
    assert report.surviving[("position", "position")] == pytest.approx(1.0)
    assert report.random_surviving["position"] == pytest.approx(np.sqrt(4 / 12))

    shared_segment = token[:2].copy()
    overlap = embedding_subspaces.subspace_report({"token": token, "position": position, "segment": shared_segment}, k=6)
    np.testing.assert_allclose(overlap.angles[("token", "segment")], [0, 0], atol=1e-5)
    assert overlap.surviving[("segment", "token")] == pytest.approx(1.0)


def test_report_from_precomputed_directions_is_the_same():
    rng = np.random.default_rng(6)
    tables = {"token": rng.standard_normal((30, 8)), "position": rng.standard_normal((10, 8)), "segment": rng.standard_normal((2, 8))}
    directions = {name: embedding_subspaces.singular_directions(table) for name, table in tables.items()}
    assert directions["segment"].shape == (8, 2) and directions["token"].shape == (8, 8)
    fresh = embedding_subspaces.subspace_report(tables, k=3)
    reused = embedding_subspaces.subspace_report(tables, k=3, directions=directions)
    for pair in embedding_subspaces.PAIRS:
        np.testing.assert_allclose(fresh.angles[pair], reused.angles[pair])
    assert fresh.surviving == reused.surviving


def test_random_baseline_is_far_from_zero():
    angles = embedding_subspaces.random_subspace_angles(384, 16, 16, seed=0)
    assert angles.shape == (16,)
    assert np.degrees(angles).min() > 30  # random 16-dim subspaces of 384 dims are nearly orthogonal


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="same shape"):
        embedding_subspaces.decompose(np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="rows, hidden"):
        embedding_subspaces.pca(np.ones(3), 1)
    with pytest.raises(ValueError, match="different spaces"):
        embedding_subspaces.principal_angles(np.ones((3, 1)), np.ones((4, 1)))
