"""Frame metrics. PSNR and SSIM are computed directly; LPIPS and FVD need pretrained backbones,
which are only ever loaded from a local path, and are otherwise reported as skipped.

Backbone files (TorchScript, so no torchvision or download is needed to run them):
- LPIPS: forward(x: (N, 3, H, W) in [-1, 1]) -> list of (N, C_l, H_l, W_l) feature maps (the LPIPS
  input scaling inside), with one buffer `lpips_head_<l>` of shape (C_l,) per map holding the
  non-negative linear-head weights (for the official AlexNet LPIPS: the features after each ReLU of
  torchvision's alexnet and the 1x1 weights of lin0..lin4). The distance itself is computed here.
- FVD: an I3D feature extractor called as model(x, rescale=False, resize=False,
  return_features=True) with x (B, 3, T, 224, 224) in [-1, 1] (the common i3d_torchscript.pt).
"""

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
    """LPIPS from a local TorchScript backbone (format in the module docstring); mean over frames."""

    def __init__(self, weights: str | None):
        self.backbone, self.heads = None, []
        if weights:
            self.backbone = torch.jit.load(str(Path(weights)), map_location="cpu").eval()
            buffers = dict(self.backbone.named_buffers())
            self.heads = [buffers[f"lpips_head_{i}"] for i in range(sum(k.startswith("lpips_head_") for k in buffers))]
            if not self.heads:
                raise ValueError(f"{weights}: an LPIPS backbone needs buffers lpips_head_0, lpips_head_1, ...")

    def __call__(self, generated: np.ndarray, target: np.ndarray) -> float | str:
        if self.backbone is None:
            return SKIPPED
        with torch.no_grad():
            features = self.backbone(_frames(generated) * 2 - 1), self.backbone(_frames(target) * 2 - 1)
            return float(lpips_distance(*features, self.heads).mean())


def lpips_distance(features_a: list[torch.Tensor], features_b: list[torch.Tensor], heads: list[torch.Tensor],
                   eps: float = 1e-10) -> torch.Tensor:
    """(N,) LPIPS: per layer, unit-normalise each position's feature vector over channels, weight the
    squared difference per channel by the layer's head, sum channels, average space; sum layers."""
    if not len(features_a) == len(features_b) == len(heads):
        raise ValueError(f"{len(features_a)} / {len(features_b)} feature maps for {len(heads)} heads")
    total = 0.0
    for a, b, head in zip(features_a, features_b, heads):
        a = a / (a.pow(2).sum(1, keepdim=True).sqrt() + eps)
        b = b / (b.pow(2).sum(1, keepdim=True).sqrt() + eps)
        total = total + ((a - b).pow(2) * head.view(1, -1, 1, 1)).sum(1).mean(dim=(1, 2))
    return total


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
    root = linalg.sqrtm(cov_a @ cov_b)
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * np.real(root)))
