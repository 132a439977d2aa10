"""The shipped embedded_cpu model on simulated episodes it has never seen (a seed no training run
used), through the project's own evaluation, as the node serves it (frames composited on the
reference: the robot's camera is fixed): it must beat copying the reference frame on PSNR and SSIM, and
score better with the clip's own skeleton stream than with another episode's (it follows the action, it
does not just repeat the scene), each by most of the margin the shipped model has."""

import pytest

from rynn_robot_bridge.sim.scenes import TASKS
from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.episodes.generate import generate
from rynn_world.episodes.rollout import EpisodeSettings
from rynn_world.evaluation.evaluate import EvalConfig, evaluate
from rynn_world.model.configs import get_config
from rynn_world.training.config import DataConfig

UNSEEN_SEED = 20261130  # the shipped model was trained on --seed 6
# The shipped model on these four clips (2026-12-04, this module's evaluation): PSNR 20.81 dB against copying's
# 18.77 (+2.04), SSIM 0.810 against 0.782 (+0.028), action grounding +0.77 dB. A model that falls this far below
# them (a quarter of each margin, about) fails: the thresholds follow the shipped figures, not just "beats copying".
MIN_PSNR_OVER_COPY_DB = 1.5
MIN_SSIM_OVER_COPY = 0.02
MIN_GROUNDING_DB = 0.5
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    config = get_config("embedded_cpu")
    packaged = packaged_checkpoint(config.name)
    assert packaged is not None, "rynn_world ships embedded_cpu weights"
    out = tmp_path_factory.mktemp("default_model")
    # the kind of episodes the shipped model was trained on (scripts/train_default_model.sh)
    settings = EpisodeSettings(operator="synthetic", scene_variation=False, duration_s=1.1, fps=config.fps,
                               image_width=config.width, image_height=config.height)
    generate(out / "episodes", list(TASKS), 1, UNSEEN_SEED, settings, progress=False)
    return evaluate(EvalConfig(
        model=config.name, student_checkpoint=str(packaged), output_dir=str(out / "eval"), num_threads=2,
        data=DataConfig(kind="robot_episodes", root=str(out / "episodes"), clip_frames=17, stride=16)))


def test_the_shipped_model_beats_copying_the_reference_on_psnr_and_follows_the_action(report):
    student, copied = report["methods"]["student"]["all"], report["methods"]["copy_reference"]["all"]
    assert student["clips"] == len(TASKS)
    assert student["psnr"] >= copied["psnr"] + MIN_PSNR_OVER_COPY_DB, report["methods"]
    assert report["grounding"]["all"]["psnr_gap"] >= MIN_GROUNDING_DB, report["grounding"]


def test_the_shipped_model_beats_copying_the_reference_on_ssim(report):
    student, copied = report["methods"]["student"]["all"], report["methods"]["copy_reference"]["all"]
    assert student["ssim"] >= copied["ssim"] + MIN_SSIM_OVER_COPY, report["methods"]
