"""Frame metrics. PSNR and SSIM are computed directly; LPIPS and FVD need pretrained backbones,
which are only ever loaded from a local path, and are otherwise reported as skipped."""

from pathlib import Path

import numpy as np
import torch
from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

SKIPPED = "skipped (no local weights)"


def _frames(video: np.ndarray) -> torch.Tensor:
    """(T, H, W, 3) uint8 -> (T, 3, H, W) float in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(video)).permute(0, 3, 1, 2).float() / 255.0


def psnr(generated: np.ndarray, target: np.ndarray) -> float:
    """PSNR (dB) of the whole clip (MSE over all frames): finite even when some frames are static."""
    return float(peak_signal_noise_ratio(_frames(generated), _frames(target), data_range=1.0))


def ssim(generated: np.ndarray, target: np.ndarray) -> float:
    return float(structural_similarity_index_measure(_frames(generated), _frames(target), data_range=1.0))


class LPIPSMetric:
    """LPIPS (AlexNet) from a local state dict of torchmetrics' LPIPS network (backbone + linear heads)."""

    def __init__(self, weights: str | None):
        self.model = None
        if weights:
            from torchmetrics.image.lpip import LearnedPerceptualImagePatchSimilarity

            metric = LearnedPerceptualImagePatchSimilarity(net_type="alex", normalize=True)
            metric.net.load_state_dict(torch.load(Path(weights), map_location="cpu", weights_only=True))
            self.model = metric.net.eval()

    def __call__(self, generated: np.ndarray, target: np.ndarray) -> float | str:
        if self.model is None:
            return SKIPPED
        with torch.no_grad():
            return float(self.model(_frames(generated) * 2 - 1, _frames(target) * 2 - 1).mean())


class FVDMetric:
    """FVD with a local TorchScript I3D feature extractor (input (B, 3, T, 224, 224) in [-1, 1])."""

    def __init__(self, weights: str | None):
        self.model = torch.jit.load(str(weights), map_location="cpu").eval() if weights else None
        self.real: list[np.ndarray] = []
        self.fake: list[np.ndarray] = []

    def _features(self, video: np.ndarray) -> np.ndarray:
        x = torch.nn.functional.interpolate(_frames(video), size=(224, 224), mode="bilinear", align_corners=False)
        x = (x * 2 - 1).permute(1, 0, 2, 3).unsqueeze(0)
        with torch.no_grad():
            return self.model(x, rescale=False, resize=False, return_features=True).numpy()[0]

    def add(self, generated: np.ndarray, target: np.ndarray) -> None:
        if self.model is not None:
            self.fake.append(self._features(generated))
            self.real.append(self._features(target))

    def compute(self) -> float | str:
        if self.model is None:
            return SKIPPED
        if len(self.real) < 2:
            return "skipped (needs >= 2 videos)"
        return frechet_distance(np.stack(self.real), np.stack(self.fake))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import linalg

    mu_a, mu_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root, _ = linalg.sqrtm(cov_a @ cov_b, disp=False)
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * np.real(root)))
