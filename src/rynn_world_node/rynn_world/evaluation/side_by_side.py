"""Look at it: held-out clips as generated | real | copy-the-reference, a few instants each, in one picture.

Scores say how far a model is from the recording; this says how it fails (blurred fingers, a block that
never moves, an arm that dissolves). The evaluation keeps the first clip of up to ``MAX_CLIPS`` tasks in
which an object moves (the interaction clips: where copying the reference is wrong) and draws them."""

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

SIDE_BY_SIDE_PNG = "side_by_side.png"
MAX_CLIPS = 3
INSTANTS = 4  # generated frames shown per clip, evenly spaced to its last


@dataclass(frozen=True)
class Example:
    """One clip's frames 1.. as generated, as recorded, and as copying the reference gives them."""

    clip: str
    task: str
    generated: np.ndarray  # (T, H, W, 3) uint8
    real: np.ndarray
    copy: np.ndarray


class ExamplePicker:
    """Keeps the first interaction clip of each task, up to ``limit`` tasks, in the order offered."""

    def __init__(self, limit: int = MAX_CLIPS):
        self.limit = limit
        self.examples: list[Example] = []

    def offer(self, example: Example, moved: bool) -> None:
        if moved and len(self.examples) < self.limit and example.task not in {e.task for e in self.examples}:
            self.examples.append(example)


def instants(frames: int, count: int = INSTANTS) -> list[int]:
    """Indices of ``count`` frames evenly spaced over frames 1..``frames`` (the last one included)."""
    return sorted({round(frames * (k + 1) / count) - 1 for k in range(count)})


def plot_side_by_side(examples: list[Example], path: Path, fps: float) -> Path:
    """Rows: each clip's generated, real and copied frames; columns: instants after the reference."""
    if not examples:
        raise ValueError("no clip to draw")
    shown = instants(len(examples[0].generated))
    height, width = examples[0].generated.shape[1:3]
    rows = [(e, name, getattr(e, name)) for e in examples for name in ("generated", "real", "copy")]
    fig, axes = plt.subplots(len(rows), len(shown), squeeze=False,
                             figsize=(len(shown) * width / 100 + 1.2, len(rows) * height / 100 + 0.5))
    for r, (example, name, video) in enumerate(rows):
        for c, index in enumerate(shown):
            ax = axes[r][c]
            ax.imshow(video[index])
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"t = {(index + 1) / fps:.2f} s", fontsize=8)
            if c == 0:
                label = f"{example.task}\n{name}" if name == "generated" else name
                ax.set_ylabel(label, fontsize=8, fontweight="bold" if name == "generated" else "normal")
    fig.tight_layout(pad=0.3, h_pad=0.2, w_pad=0.2)
    fig.canvas.draw()
    picture = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3])
    plt.close(fig)
    picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)  # a third of the bytes
    return path
