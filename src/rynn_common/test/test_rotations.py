"""Rotation matrices -> quaternions, vectorised (robot TF, operator trackers)."""

import numpy as np

from rynn_common.rotations import quaternions_xyzw


def test_vectorised_quaternions_match_transforms3d_one_by_one():
    """Random rotations and the 180-degree turns about each axis (where w = 0 and one case must be chosen)."""
    from transforms3d.euler import euler2mat
    from transforms3d.quaternions import mat2quat

    rng = np.random.default_rng(3)
    rotations = np.stack([euler2mat(*rng.uniform(-np.pi, np.pi, 3)) for _ in range(500)]
                         + [np.eye(3), np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])])
    expected = np.array([np.roll(mat2quat(matrix), -1) for matrix in rotations])  # w, x, y, z -> x, y, z, w
    expected[expected[:, 3] < 0] *= -1
    np.testing.assert_allclose(quaternions_xyzw(rotations), expected, atol=1e-12)
