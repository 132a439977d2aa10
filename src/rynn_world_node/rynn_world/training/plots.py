"""The loss-curve PNG written at the end of every run (raw values and a moving average)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def plot_losses(history: dict[str, list[tuple[int, float]]], path: Path, title: str) -> Path:
    names = [n for n, values in history.items() if values]
    fig, axes = plt.subplots(len(names) or 1, 1, figsize=(7, 2.4 * max(len(names), 1)), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        steps, values = np.array(history[name], dtype=np.float64).T
        ax.plot(steps, values, lw=0.6, alpha=0.4, label="raw")
        window = max(1, len(values) // 20)
        if len(values) >= window:
            ax.plot(steps[window - 1:], np.convolve(values, np.ones(window) / window, "valid"), lw=1.5, label=f"mean of {window}")
        ax.set_ylabel(name)
        ax.set_yscale("log" if (values > 0).all() else "linear")
        ax.legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
