"""Policy learning (rynn_world.policy): LeRobot's ACT trained on the exporter's LeRobot v3 data, and
closed-loop trials on the simulated robot through the bridge's command path.

Two short task-operator episodes (block pushing, small camera) are recorded by the generator's own
``record_episode`` and exported by the project's LeRobot exporter; everything else runs on them
(slow: recording them, training and the trials take 20-30 s each on the loaded reference machine).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco)
from rynn_robot_bridge.export.bag_episode import load_episode
from rynn_robot_bridge.export.lerobot import export
from rynn_robot_bridge.sim.scenes import ZONE_HALF, ZONE_X, ZONE_Y
from rynn_world.episodes.rollout import EpisodeSettings, record_episode
from rynn_world.policy.dataset import ActionChunkDataset, read_lerobot_dataset
from rynn_world.policy.lerobot_compat import load_act
from rynn_world.policy.rollout import RolloutSettings, run_trial
from rynn_world.policy.train import PolicySize, TrainSettings, load_policy, train_policy

TASK = "block_pushing"
SEEDS = (11, 12)
FPS = 16
CAMERA = {"image_width": 64, "image_height": 40}
TINY = PolicySize(image_height=32, image_width=48, chunk_size=4, n_action_steps=2, dim_model=32, n_heads=2,
                  dim_feedforward=64, n_encoder_layers=1, n_decoder_layers=1, n_vae_encoder_layers=1, latent_dim=8)


@pytest.fixture(scope="module")
def episodes_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("policy_episodes")
    settings = EpisodeSettings(operator="task", duration_s=1.5, fps=FPS, **CAMERA)
    for seed in SEEDS:
        record_episode(TASK, seed, settings, root / f"episode_{seed}" / "bag")
    export([root], root / "lerobot", FPS, progress=False)
    return root


@pytest.fixture(scope="module")
def trained(episodes_root, tmp_path_factory) -> tuple[Path, dict]:
    episodes = read_lerobot_dataset(episodes_root / "lerobot", TINY.image_height, TINY.image_width)
    out = tmp_path_factory.mktemp("policy") / "tiny"
    info = train_policy(episodes, out, TINY, TrainSettings(steps=30, batch_size=8, lr=1e-3, lr_backbone=1e-3,
                                                           log_every=5), progress=lambda line: None)
    return out, info


def test_lerobot_act_is_lerobots_own():
    act = load_act()
    assert act.version == "0.4.4"
    assert act.ACTPolicy.__module__ == "lerobot.policies.act.modeling_act"


@pytest.mark.slow  # the module's episodes take ~25 s to record on 2 loaded cores
def test_dataset_actions_and_states_are_the_source_episodes(episodes_root):
    episodes = read_lerobot_dataset(episodes_root / "lerobot", 32, 48)
    assert len(episodes) == len(SEEDS)
    for episode, seed in zip(episodes, SEEDS):
        source = load_episode(episodes_root / f"episode_{seed}" / "bag", FPS)  # the bag's streams on the frame clock
        np.testing.assert_array_equal(episode.action, source.action.astype(np.float32))
        np.testing.assert_array_equal(episode.state, source.state.astype(np.float32))
        assert episode.images.shape == (source.length, 32, 48, 3)
        assert episode.task == TASK
        assert np.ptp(episode.action, axis=0).max() > 0.01  # the operator moved: not a constant stand-in


@pytest.mark.slow  # the module's episodes take ~25 s to record on 2 loaded cores
def test_action_chunks_pad_past_the_episode_end(episodes_root):
    episodes = read_lerobot_dataset(episodes_root / "lerobot", 32, 48, limit=1)
    data = ActionChunkDataset(episodes, chunk=4)
    last = data[len(data) - 1]
    assert last["action_is_pad"].tolist() == [False, True, True, True]
    np.testing.assert_array_equal(last["action"][1].numpy(), episodes[0].action[-1])
    first = data[0]
    np.testing.assert_array_equal(first["action"].numpy(), episodes[0].action[:4])
    assert first["observation.images.egocentric"].shape == (3, 32, 48)
    assert 0.0 <= float(first["observation.images.egocentric"].min()) <= float(first["observation.images.egocentric"].max()) <= 1.0


@pytest.mark.slow  # the module's episodes take ~25 s to record on 2 loaded cores
def test_training_decreases_the_loss_and_saves_a_loadable_policy(trained):
    directory, info = trained
    losses = [entry["loss"] for entry in info["curve"]]
    assert len(losses) == 6
    assert losses[-1] < 0.5 * losses[0], losses
    assert info["steps_done"] == 30 and info["backbone_weights"].startswith("none")
    policy = load_policy(directory)
    assert policy.size == TINY
    image = np.zeros((TINY.image_height, TINY.image_width, 3), np.uint8)
    action = policy.act(image, np.zeros(54))
    assert action.shape == (54,) and np.isfinite(action).all()


@pytest.mark.slow  # the module's episodes take ~25 s to record on 2 loaded cores
def test_rollout_is_deterministic_and_returns_the_scene_success(trained):
    policy = load_policy(trained[0])
    settings = RolloutSettings(horizon_factor=0.25, **CAMERA)
    first = run_trial(policy, TASK, SEEDS[0], settings, keep_images=True)
    second = run_trial(policy, TASK, SEEDS[0], settings, keep_images=True)
    assert first.frames == len(first.images) > 0
    np.testing.assert_array_equal(first.images, second.images)
    assert first.success is second.success is False  # the block cannot reach the right zone in a fraction of the task
    assert first.commands_rejected == 0 and first.actions_rejected == 0
    other = run_trial(policy, TASK, SEEDS[1], settings, keep_images=True)
    assert not np.array_equal(first.images[0], other.images[0])  # another seed, another scene


class ReplayPolicy:
    """Plays an episode's recorded frame-clock actions back, ignoring what it sees (a replayed demonstration)."""

    def __init__(self, actions: np.ndarray, size: PolicySize):
        self.actions, self.size, self.index = actions, size, 0

    def reset(self) -> None:
        self.index = 0

    def act(self, image, state) -> np.ndarray:
        action = self.actions[min(self.index, len(self.actions) - 1)]
        self.index += 1
        return action


@pytest.mark.slow
def test_replayed_demonstration_pushes_the_block_and_holding_still_does_not(tmp_path):
    """The trial drives the physics and judges it with the scene's check: the task operator's own actions
    of a seed, replayed open loop through the bridge's command path from the same scene, push the block
    out of the left zone towards the right; holding the first action leaves it where it was, a failure.
    (The trial starts once the bridge tracks the rest pose; before that, the policy's first seconds ran in
    the bridge's slow approach after its start-up hold, and a finger overshooting its range in contact got
    the robot state rejected and the robot held: no replay reached the right zone.)"""
    seed = 3
    settings = EpisodeSettings(operator="task", fps=FPS, **CAMERA)
    summary, frames = record_episode(TASK, seed, settings, tmp_path / "bag")
    assert summary["success"], "the task operator's own episode of this seed succeeds"
    rollout = RolloutSettings(horizon_factor=1.0, **CAMERA)
    size = replace(TINY, image_height=CAMERA["image_height"], image_width=CAMERA["image_width"])
    replayed = run_trial(ReplayPolicy(frames["action"], size), TASK, seed, rollout)
    start, end = np.array(replayed.start_positions["block"]), np.array(replayed.end_positions["block"])
    assert end[1] < start[1] - 0.1  # pushed more than 10 cm to the right (-y)
    assert block_zone_of(end) != "left"
    still = run_trial(ReplayPolicy(frames["action"][:1], size), TASK, seed, rollout)
    assert still.success is False
    np.testing.assert_allclose(still.end_positions["block"], still.start_positions["block"], atol=0.01)
    assert not replayed.success or block_zone_of(end) == "right"


def block_zone_of(position) -> str | None:
    for zone, y in ZONE_Y.items():
        if abs(position[0] - ZONE_X) <= ZONE_HALF[0] and abs(position[1] - y) <= ZONE_HALF[1]:
            return zone
    return None
