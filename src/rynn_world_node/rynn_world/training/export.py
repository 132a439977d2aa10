"""Writing and reading world-model checkpoint directories: transformer/ + vae/ in diffusers layout
(what rynn_world.nodes.model_loading and load_transformer read).

A base-model directory may also hold NULL_TEXT_FILE, the base model's embedding of the empty prompt
(for Wan2.2: the UMT5 encoder's output for "", zero-padded to 512 tokens, as WanPipeline.encode_prompt
returns it), as a safetensors file with one tensor "prompt_embeds" of shape (tokens, text_dim) or
(1, tokens, text_dim). Training initialises the model's null_text_embedding (the text the teleop loop
runs with) from it when the transformer weights carry none; without the file it starts at zeros.
"""

import shutil
from pathlib import Path

import torch
from diffusers import AutoencoderKLWan
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from ..model.configs import WorldModelConfig
from ..model.placement import place
from ..model.transformer import RynnWorldTransformer
from ..model.vae import build_vae
from ..model.weights import load_transformer


def save_world_model(directory, transformer: RynnWorldTransformer | None = None, vae: AutoencoderKLWan | None = None) -> Path:
    directory = Path(directory)
    if transformer is not None:
        transformer.save_pretrained(str(directory / "transformer"), safe_serialization=True)
    if vae is not None:
        vae.save_pretrained(str(directory / "vae"), safe_serialization=True)
    return directory


def save_with_transformer(source, out, transformer: RynnWorldTransformer) -> Path:
    """A copy of checkpoint `source` (vae/, tiny_decoder/, ...) with another transformer: what a variant
    derived from a trained model (deeper, finer patches) needs to be served and fine-tuned."""
    source, out = Path(source), Path(out)
    if out.exists():
        shutil.rmtree(out)
    for part in source.iterdir():
        if part.is_dir() and part.name != "transformer":
            shutil.copytree(part, out / part.name)
    return save_world_model(out, transformer)


def load_vae(config: WorldModelConfig, checkpoint: str | None, device=None, dtype=torch.float32) -> AutoencoderKLWan:
    """The VAE of a checkpoint directory (<dir>/vae or <dir> itself), or a fresh one for the config."""
    if checkpoint is None:
        return build_vae(config.vae, device=device, dtype=dtype)
    path = Path(checkpoint)
    path = path / "vae" if (path / "vae").is_dir() else path
    return AutoencoderKLWan.from_pretrained(str(path), torch_dtype=dtype).to(device).eval()


NULL_TEXT_FILE = "null_text_embedding.safetensors"
NULL_TEXT_KEY = "prompt_embeds"


def save_null_text_embedding(directory, prompt_embeds: torch.Tensor) -> Path:
    """Write the empty-prompt embedding into a checkpoint directory in the format described above."""
    path = Path(directory) / NULL_TEXT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({NULL_TEXT_KEY: prompt_embeds.detach().float().cpu().contiguous()}, str(path))
    return path


def read_prompt_embeddings(path, tokens: int, text_dim: int) -> dict[str, torch.Tensor]:
    """Every tensor of a safetensors file of prompt embeddings (name -> (n, text_dim) or (1, n,
    text_dim)), as (tokens, text_dim) zero-padded the way Wan pads its prompts."""
    embeddings = {}
    for name, embedding in load_file(str(path)).items():
        if embedding.ndim == 3 and embedding.shape[0] == 1:
            embedding = embedding[0]
        if embedding.ndim != 2 or embedding.shape[1] != text_dim or embedding.shape[0] > tokens:
            raise ValueError(f"{path}: {name} has shape {tuple(embedding.shape)}; the model needs "
                             f"(<= {tokens}, {text_dim})")
        embeddings[name] = torch.nn.functional.pad(embedding.float(), (0, 0, 0, tokens - embedding.shape[0]))
    return embeddings


def read_null_text_embedding(path, tokens: int, text_dim: int) -> torch.Tensor:
    """The (tokens, text_dim) empty-prompt embedding of a NULL_TEXT_FILE."""
    embeddings = read_prompt_embeddings(path, tokens, text_dim)
    if NULL_TEXT_KEY not in embeddings:
        raise ValueError(f"{path}: expected a tensor named {NULL_TEXT_KEY!r}, found {sorted(embeddings)}")
    return embeddings[NULL_TEXT_KEY]


def _weights_have_null_text(transformer_dir: Path) -> bool:
    for file in transformer_dir.glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as weights:
            if "null_text_embedding" in weights.keys():
                return True
    return False


def load_or_build_transformer(config: WorldModelConfig, checkpoint: str | None, allow_missing_control: bool = False,
                              device=None, dtype=torch.float32) -> RynnWorldTransformer:
    """The checkpoint's transformer, or fresh weights for the config. Its null text embedding comes
    from the weights, else from <checkpoint>/NULL_TEXT_FILE, else stays at zeros."""
    directory = None if checkpoint is None else Path(checkpoint)
    if directory is None or not (directory / "transformer").is_dir():
        model = RynnWorldTransformer(**config.transformer, null_text_tokens=config.null_text_tokens)
        trained_null_text = False
    else:
        model = load_transformer(directory / "transformer", allow_missing_control=allow_missing_control)
        trained_null_text = _weights_have_null_text(directory / "transformer")
    if directory is not None and not trained_null_text and (directory / NULL_TEXT_FILE).is_file():
        with torch.no_grad():
            model.null_text_embedding.copy_(read_null_text_embedding(directory / NULL_TEXT_FILE,
                                                                     *model.null_text_embedding.shape))
    return place(model, device, dtype)
