"""rynn_world's training reader takes the clips rynn_robot_bridge exports from recorded bags."""

from __future__ import annotations

import numpy as np
import pytest

from recorded_bags import HEIGHT, WIDTH, SkeletonBagBuilder
from rynn_robot_bridge.export.clips import export_clips


@pytest.mark.slow  # imports the training stack (torch): ~10 s of CPU
def test_the_training_reader_takes_recorded_clips(tmp_path):
    from rynn_world.data import robot_episodes

    builder = SkeletonBagBuilder(tmp_path / "recordings")
    builder.episode("digital", "wipe", seconds=0.5)
    entries, _ = export_clips([tmp_path / "recordings"], tmp_path / "clips", fps=16, progress=False)
    episode = robot_episodes.read_episode(tmp_path / "clips" / entries[0]["bag"].rsplit("/", 1)[0])
    assert episode.frames.shape == (8, HEIGHT, WIDTH, 3) and episode.actions.shape == (8, 54)
    np.testing.assert_allclose(episode.joints_camera[0, 0, 0], [-0.05, 0.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(episode.elbows[0, 0], [-0.2, 0.3, 0.6], atol=1e-9)  # the recorded elbows reach training
    assert np.isnan(episode.elbows[0, 1]).all()
