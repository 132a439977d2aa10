"""Data readers on small files made here: robot episodes (bag + frames.npz and bag only), EgoDex
(HDF5 + MP4), VITRA-style (NPZ/JSON + MP4), and the latent cache."""

import json
import shutil

import h5py
import numpy as np
import pytest
import torch

from rynn_world.data import EgoDexDataset, LatentClipDataset, RobotEpisodeDataset, VitraDataset, cache_latents
from rynn_world.data.clips import check_clip_frames, resample_indices
from rynn_world.data.egodex import mediapipe_joint_names
from rynn_world.data.video import write_video
from rynn_world.model.configs import get_config
from rynn_world.model.vae import build_vae
from rynn_world.training.config import DataConfig, EpisodeRoot
from rynn_world.training.datasets import build_clip_dataset, build_latent_dataset

H, W = 64, 64


def _hand(center, spread=0.02):
    offsets = np.random.default_rng(1).normal(0, spread, (21, 3))
    return np.asarray(center) + offsets


@pytest.fixture(scope="module")
def robot_root(tmp_path_factory):
    from rynn_world.episodes.generate import main as generate

    out = tmp_path_factory.mktemp("episodes")
    generate(["--tasks", "block_pushing", "--episodes", "1", "--seed", "3", "--out", str(out),
              "--duration", "1.2", "--width", "96", "--height", "64"])
    return out


def test_clip_lengths_are_one_plus_four_k():
    assert check_clip_frames(81) == 81 and check_clip_frames(25) == 25 and check_clip_frames(9) == 9
    with pytest.raises(ValueError, match="1 \\+ 4k"):
        check_clip_frames(16)


def test_resampling_to_16_fps_picks_the_newest_frame_at_each_tick():
    times = np.arange(31) / 30.0  # 1 s at 30 FPS
    picks = resample_indices(times, 16.0)
    assert len(picks) == 17 and picks[0] == 0 and picks[-1] == 30  # ticks 0, 1/16, ..., 1 s and np.all(np.diff(picks) >= 1)
    assert np.all(times[picks] <= np.arange(17) / 16.0 + 1e-9)


def test_robot_episodes_from_frames_npz_and_from_the_bag_alone_agree(robot_root, tmp_path):
    clips = RobotEpisodeDataset(robot_root, clip_frames=9, height=H, width=W, stride=4)
    assert len(clips) == 3  # 20 frames at 16 FPS -> starts 0, 4, 8
    clip = clips[1]
    assert clip.frames.shape == clip.skeleton.shape == (9, H, W, 3) and clip.frames.dtype == np.uint8
    assert clip.actions.shape == (9, 54) and clip.task == "block_pushing"
    assert np.array_equal(clip.reference, clip.frames[0])
    assert clip.skeleton.max() > 0, "the operator's hands are in view and must be drawn"
    bag_only = tmp_path / "bag_only"
    shutil.copytree(robot_root, bag_only)
    (bag_only / "block_pushing" / "episode_0000" / "frames.npz").unlink()
    fallback = RobotEpisodeDataset(bag_only, clip_frames=9, height=H, width=W, stride=4)[1]
    assert np.array_equal(fallback.frames, clip.frames)
    assert np.abs(fallback.actions - clip.actions).max() < 1e-5
    assert np.array_equal(fallback.skeleton, clip.skeleton)  # skeletons always come from the bag's messages


def test_robot_episode_split_by_episode_number(robot_root):
    with pytest.raises(ValueError, match="no episodes"):
        RobotEpisodeDataset(robot_root, clip_frames=9, height=H, width=W, exclude_episodes=[0])


def _video(path, n, size=(48, 64)):
    frames = np.zeros((n, *size, 3), dtype=np.uint8)
    for i in range(n):
        frames[i, :, : 2 + i] = 200  # a growing bar, so frames differ
    write_video(path, frames, fps=30)


def test_egodex_reader_projects_arkit_hands_into_the_video(tmp_path):
    n = 40
    task_dir = tmp_path / "fold_towel"
    task_dir.mkdir()
    _video(task_dir / "0.mp4", n)
    K = np.array([[50.0, 0, 32.0], [0, 50.0, 24.0], [0, 0, 1]])
    with h5py.File(task_dir / "0.hdf5", "w") as f:
        f["camera/intrinsic"] = K
        f["transforms/camera"] = np.repeat(np.eye(4)[None], n, axis=0)  # camera at the world origin
        for side, x in (("left", -0.1), ("right", 0.1)):
            # ARKit camera looks along -z: hands 0.5 m in front are at z = -0.5
            for j, name in enumerate(mediapipe_joint_names(side)):
                pose = np.repeat(np.eye(4)[None], n, axis=0)
                pose[:, :3, 3] = _hand([x, 0.0, -0.5])[j]
                f[f"transforms/{name}"] = pose
            elbow = np.repeat(np.eye(4)[None], n, axis=0)
            elbow[:, :3, 3] = [x, -0.2, -0.6]
            f[f"transforms/{side}Forearm"] = elbow
    clips = EgoDexDataset(tmp_path, clip_frames=9, height=H, width=W)
    assert len(clips) == 2  # 40 frames at 30 FPS = 1.3 s -> 21 ticks at 16 FPS -> starts 0, 8
    clip = clips[0]
    assert clip.actions is None and clip.task == "fold_towel"
    assert clip.frames.shape == clip.skeleton.shape == (9, H, W, 3)
    drawn = clip.skeleton[0].max(-1) > 0
    cols = np.nonzero(drawn.any(0))[0]
    assert cols.min() < W // 2 < cols.max(), "both hands, left and right of the centre"


@pytest.mark.parametrize("fmt", ["npz", "json"])
def test_vitra_reader_uses_the_first_frame_camera_pose(tmp_path, fmt):
    n = 30
    _video(tmp_path / "clip0.mp4", n)
    pose = np.eye(4)
    pose[:3, 3] = [0.0, 0.0, -1.0]  # camera 1 m behind the world origin
    joints = np.stack([np.stack([_hand([-0.1, 0, -0.5]), _hand([0.1, 0, -0.5])])] * n)  # 0.5 m in front
    data = {"joints": joints, "intrinsics": np.array([[50.0, 0, 32], [0, 50.0, 24], [0, 0, 1]]), "camera_pose": pose,
            "task": "pour"}
    if fmt == "npz":
        np.savez(tmp_path / "clip0.npz", **data)
    else:
        (tmp_path / "clip0.json").write_text(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in data.items()}))
    clips = VitraDataset(tmp_path, clip_frames=9, height=H, width=W)
    clip = clips[0]
    assert clip.task == "pour" and clip.actions is None and clip.skeleton[0].max() > 0


def test_latent_cache_is_written_once_and_matches_the_vae(robot_root, tmp_path):
    config = get_config("tiny")
    torch.manual_seed(0)
    vae = build_vae(config.vae)
    clips = RobotEpisodeDataset(robot_root, clip_frames=9, height=config.height, width=config.width, stride=8)
    directory = cache_latents(clips, vae, tmp_path / "latents", progress=False)
    stamp = (directory / "index.json").stat().st_mtime_ns
    cache_latents(clips, vae, directory, progress=False)
    assert (directory / "index.json").stat().st_mtime_ns == stamp, "same VAE: the cache is reused"
    item = LatentClipDataset(directory)[0]
    assert item["latents"].shape == item["control"].shape == (config.latent_channels, 3, 8, 8)


def test_more_roots_mix_robot_episodes_each_selected_with_its_own_stride(robot_root):
    config = get_config("tiny")
    alone = RobotEpisodeDataset(robot_root, clip_frames=9, height=config.height, width=config.width, stride=8)
    denser = RobotEpisodeDataset(robot_root, clip_frames=9, height=config.height, width=config.width, stride=4)
    data = DataConfig(root=str(robot_root), clip_frames=9, stride=8, more_roots=[EpisodeRoot(str(robot_root), stride=4)])
    mix = build_clip_dataset(data, config)
    assert len(mix) == len(alone) + len(denser) and len(denser) > len(alone)
    second = mix[len(alone) + 1]
    assert np.array_equal(second.frames, denser[1].frames) and second.source_id == denser[1].source_id
    # the same episode read from two roots counts as two episodes (grounding pairs clips of other episodes)
    assert mix.items[0][0] != mix.items[len(alone)][0]
    with pytest.raises(ValueError, match="robot episodes only"):
        build_clip_dataset(DataConfig(kind="egodex", root=str(robot_root), more_roots=data.more_roots), config)


def test_latent_cache_is_encoded_again_when_the_data_changes(robot_root, tmp_path):
    config = get_config("tiny")
    torch.manual_seed(0)
    vae = build_vae(config.vae)
    one = DataConfig(root=str(robot_root), clip_frames=9, stride=8, latent_cache=str(tmp_path / "latents"))
    assert len(build_latent_dataset(one, config, vae, tmp_path)) == 2
    stamp = (tmp_path / "latents" / "index.json").stat().st_mtime_ns
    assert len(build_latent_dataset(one, config, vae, tmp_path)) == 2
    assert (tmp_path / "latents" / "index.json").stat().st_mtime_ns == stamp, "same data, same VAE: reused"
    mixed = DataConfig(**{**vars(one), "more_roots": [EpisodeRoot(str(robot_root), stride=4)]})
    denser = RobotEpisodeDataset(robot_root, clip_frames=9, height=config.height, width=config.width, stride=4)
    assert len(build_latent_dataset(mixed, config, vae, tmp_path)) == 2 + len(denser), "other data: encoded again"
