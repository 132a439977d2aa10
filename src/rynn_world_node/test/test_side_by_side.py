"""The evaluation's picture of held-out clips: which clips it keeps, which instants it shows, and that
the drawn rows are the generated, real and copied frames in that order."""

import numpy as np
import pytest
from PIL import Image

from rynn_world.evaluation.side_by_side import Example, ExamplePicker, instants, plot_side_by_side


def _example(task: str, level: int, frames: int = 16) -> Example:
    video = np.full((frames, 32, 48, 3), level, dtype=np.uint8)
    return Example(f"{task}/e@0", task, generated=video, real=np.full_like(video, 250), copy=np.zeros_like(video))


def test_the_picker_keeps_the_first_moving_clip_of_each_task_up_to_its_limit():
    picker = ExamplePicker(limit=2)
    picker.offer(_example("a", 1), moved=False)  # nothing moved: copying is right there, not worth a look
    picker.offer(_example("a", 2), moved=True)
    picker.offer(_example("a", 3), moved=True)  # a second clip of a task already shown
    picker.offer(_example("b", 4), moved=True)
    picker.offer(_example("c", 5), moved=True)  # over the limit
    assert [(e.task, int(e.generated[0, 0, 0, 0])) for e in picker.examples] == [("a", 2), ("b", 4)]


def test_the_instants_are_evenly_spaced_and_end_on_the_last_frame():
    assert instants(16) == [3, 7, 11, 15]
    assert instants(16, 1) == [15]
    assert instants(3) == [0, 1, 2]


def test_the_picture_has_a_row_per_source_and_a_column_per_instant(tmp_path):
    path = plot_side_by_side([_example("a", 120), _example("b", 60)], tmp_path / "side.png", fps=16.0)
    picture = np.asarray(Image.open(path).convert("RGB")).astype(int)
    assert picture.shape[0] > 6 * 32 and picture.shape[1] > 4 * 48  # six rows of four frames, with labels
    # the frames' grey levels down the last column, each band once: a's generated, real and copied frames, then b's
    column = picture[:, picture.shape[1] - 30]
    bands = []
    for pixel in column:
        level = next((level for level in (120, 250, 0, 60) if np.all(np.abs(pixel - level) <= 2)), None)
        if level is not None and (not bands or bands[-1][0] != level):
            bands.append([level, 0])
        if level is not None:
            bands[-1][1] += 1
    assert [level for level, rows in bands if rows >= 8] == [120, 250, 0, 60, 250, 0]
    with pytest.raises(ValueError, match="no clip"):
        plot_side_by_side([], tmp_path / "none.png", fps=16.0)
