"""The interaction score (PSNR inside the moved objects' region) and which held-out clips are scored:
values by hand on small clips, and the selection and grounding pairs on a real generated episode."""

import numpy as np
import pytest

from rynn_world.data.clips import Clip
from rynn_world.evaluation.evaluate import grounding_partner, held_out_clip_indices, markdown_table, plot_interaction, summarize
from rynn_world.evaluation.interaction import MOVED_M, interaction_region, moved_objects, region_psnr
from rynn_world.evaluation.metrics import psnr


def _clip(travel_m: tuple[float, float]) -> Clip:
    """Four 8x8 frames; object 1 seen in the left columns, object 2 in the top-right corner and one
    pixel further right in the last frame; each object travels `travel_m` metres along x by the end."""
    frames = np.zeros((4, 8, 8, 3), dtype=np.uint8)
    masks = np.zeros((4, 8, 8), dtype=np.uint8)
    masks[:, :, :2] = 1
    masks[:, :2, 5:7] = 2
    masks[-1, :2, 7] = 2
    positions = np.zeros((4, 2, 3))
    positions[:, 0, 0] = np.linspace(0.0, travel_m[0], 4)
    positions[:, 1, 0] = np.linspace(0.0, travel_m[1], 4)
    return Clip(reference=frames[0], frames=frames, skeleton=frames, actions=None, task="t", source_id="t/e@0",
                object_mask=masks, object_position=positions)


def test_an_object_counts_as_moved_past_the_threshold_only():
    assert moved_objects(_clip((0.001, 0.03))) == [2]
    assert moved_objects(_clip((MOVED_M + 0.001, 0.0))) == [1]
    assert moved_objects(_clip((0.0, 0.0))) == []
    assert interaction_region(_clip((0.0, 0.0))) is None
    without_segmentation = _clip((0.0, 0.03))
    without_segmentation.object_mask = without_segmentation.object_position = None
    assert moved_objects(without_segmentation) == [] and interaction_region(without_segmentation) is None


def test_the_region_is_everywhere_a_moved_object_is_seen_in_the_clip():
    region = interaction_region(_clip((0.0, 0.03)))
    expected = np.zeros((8, 8), dtype=bool)
    expected[:2, 5:8] = True  # its place in frames 0-2 and the extra column of the last frame
    np.testing.assert_array_equal(region, expected)


def test_region_psnr_scores_only_the_region():
    truth = np.full((3, 8, 8, 3), 100, dtype=np.uint8)
    video = truth.copy()
    video[:, 4:] = 0  # wrong outside the region: no effect on the score
    region = np.zeros((8, 8), dtype=bool)
    region[:2, :2] = True
    assert region_psnr(video, truth, region) == float("inf")
    video[0, 0, 0] = 110  # one of 3 * 4 region pixels off by 10 in all three channels
    assert region_psnr(video, truth, region) == pytest.approx(10 * np.log10(255 ** 2 / (100 / 12)))
    assert region_psnr(video, truth, region) == pytest.approx(psnr(video[:, :2, :2], truth[:, :2, :2]))
    with pytest.raises(ValueError, match="shapes differ"):
        region_psnr(video[:, :4], truth, region)


def test_the_summary_averages_interaction_clips_per_task_and_prints_a_table_and_a_plot(tmp_path):
    rows = [{"task": task, "clip": f"{task}/e@0", m: {"psnr": 20.0, "ssim": 0.8, "lpips": "skipped"},
             "copy_reference": {"psnr": 18.0, "ssim": 0.8, "lpips": "skipped"}} for task, m in
            (("a", "student"), ("a", "student"), ("b", "student"))]
    rows[0]["interaction"] = {"region_pixels": 40, "moved": [1], "copy_reference": 12.0, "student": 15.0}
    rows[1]["interaction"] = {"region_pixels": 30, "moved": [2], "copy_reference": 14.0, "student": 16.0}

    class NoFVD:
        def compute(self):
            return "skipped"

    report = summarize(rows, ["copy_reference", "student"], {"copy_reference": NoFVD(), "student": NoFVD()})
    assert report["interaction"] == {"a": {"clips": 2, "copy_reference": 13.0, "student": 15.5},
                                     "all": {"clips": 2, "copy_reference": 13.0, "student": 15.5}}
    assert "| a | 2 | 13.00 | 15.50 |" in markdown_table(report)
    figure = plot_interaction(report, tmp_path / "interaction.png")
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _Clips:
    """What the selection reads of a clip dataset: items (source, start) and each clip's task."""

    def __init__(self, episodes_per_task: dict[str, int], clips_per_episode: int):
        self.tasks = [task for task, n in episodes_per_task.items() for _ in range(n)]
        self.items = [(e, 16 * k) for e in range(len(self.tasks)) for k in range(clips_per_episode)]

    def __getitem__(self, index: int) -> Clip:
        frames = np.zeros((1, 2, 2, 3), dtype=np.uint8)
        return Clip(frames[0], frames, frames, None, self.tasks[self.items[index][0]], f"{index}")


def test_every_held_out_clip_is_scored_and_grounding_swaps_in_another_episode():
    clips = _Clips({"a": 2, "b": 1}, clips_per_episode=3)
    assert held_out_clip_indices(clips) == list(range(9))
    assert held_out_clip_indices(clips, max_clips_per_task=2) == [0, 1, 6, 7]
    chosen = held_out_clip_indices(clips)
    partners = [grounding_partner(clips, chosen, n) for n in range(len(chosen))]
    assert partners == [3, 3, 3, 6, 6, 6, 0, 0, 0]
    assert all(clips.items[p][0] != clips.items[c][0] for c, p in zip(chosen, partners))
    alone = _Clips({"a": 1}, clips_per_episode=2)
    assert grounding_partner(alone, [0, 1], 0) is None
