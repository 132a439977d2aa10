"""VAE latents of clips, computed once and kept on disk so DiT training never re-runs the VAE.

Cache layout: <dir>/index.json {"vae": the encoder's fingerprint, "data": the clips' description, "clips": [{"file", "task",
"source_id"}]} and
one <dir>/<n>.safetensors per clip holding `latents` and `control`, both (C, F, h, w) in the DiT's
normalised latent space. The control video's frame 0 is black (the null action), exactly what the
streaming model pairs with the reference frame, so training and serving see the same input.
"""

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from ..model.vae import StreamingVAEEncoder, rgb_to_tensor
from .clips import Clip


def encoder_fingerprint(vae) -> str:
    """What a VAE's latents depend on: its encoder's weights and the latent statistics that normalise them.
    A decoder fine-tuned under a frozen encoder keeps the fingerprint (and the DiT, the caches, the tiny
    control encoder trained on those latents stay valid)."""
    digest = hashlib.sha256()
    encoder = {f"encoder.{k}": v for k, v in vae.encoder.state_dict().items()}
    encoder |= {f"quant_conv.{k}": v for k, v in vae.quant_conv.state_dict().items()}
    for name, tensor in sorted(encoder.items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    digest.update(json.dumps([vae.config.latents_mean, vae.config.latents_std]).encode())
    return digest.hexdigest()[:16]


def control_video(skeleton: np.ndarray) -> np.ndarray:
    """The skeleton clip as the model sees it: frame 0 (the reference's slot) is the null action."""
    video = skeleton.copy()
    video[0] = 0
    return video


@torch.no_grad()
def encode_clip(vae, clip: Clip) -> dict[str, torch.Tensor]:
    device, dtype = vae.device, vae.dtype
    latents = StreamingVAEEncoder(vae).push(rgb_to_tensor(clip.frames, device, dtype))
    control = StreamingVAEEncoder(vae).push(rgb_to_tensor(control_video(clip.skeleton), device, dtype))
    return {"latents": latents[0].float().cpu(), "control": control[0].float().cpu()}


def cache_is_current(directory, vae, data: dict | None = None) -> bool:
    """True when `directory` holds a complete cache made by this very VAE from the clips `data`
    describes (the data configuration it was made from; None: any)."""
    index = Path(directory) / "index.json"
    if not index.is_file():
        return False
    made = json.loads(index.read_text())
    return made.get("vae") == encoder_fingerprint(vae) and (data is None or made.get("data") == data)


def cache_latents(clips, vae, directory, progress: bool = True, data: dict | None = None) -> Path:
    """Encode every clip of `clips` into `directory` (reused when the same VAE made it from the same
    `data`, a JSON-able description of the clips recorded in the index)."""
    directory = Path(directory)
    if cache_is_current(directory, vae, data):
        return directory
    fingerprint = encoder_fingerprint(vae)
    index = directory / "index.json"
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for i in tqdm(range(len(clips)), desc="encode latents", disable=not progress):
        clip = clips[i]
        name = f"{i:06d}.safetensors"
        save_file(encode_clip(vae, clip), str(directory / name))
        entries.append({"file": name, "task": clip.task, "source_id": clip.source_id})
    index.write_text(json.dumps({"vae": fingerprint, "data": data, "clips": entries}, indent=1))
    return directory


class LatentClipDataset(torch.utils.data.Dataset):
    """Cached (latents, control) pairs; items are dicts of tensors for the default collate."""

    def __init__(self, directory):
        self.directory = Path(directory)
        index = self.directory / "index.json"
        if not index.is_file():
            raise FileNotFoundError(f"{index} not found: run cache_latents first")
        self.entries = json.loads(index.read_text())["clips"]
        self._tensors = [load_file(str(self.directory / e["file"])) for e in self.entries]

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return dict(self._tensors[index])
