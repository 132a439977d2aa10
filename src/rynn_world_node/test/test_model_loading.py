"""The node's model loading: a saved checkpoint reproduces the model that wrote it; a broken
one is refused with the reason; without one the node loads the packaged default of its config,
or, for a config that ships none, says it runs on random weights."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from rynn_world.checkpoints import packaged_checkpoint
from rynn_world.model.configs import get_config
from rynn_world.model.tiny_encoder import StreamingTinyControlEncoder
from rynn_world.model.vae import StreamingVAEEncoder
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.export import load_or_build_transformer, load_vae

CONFIG = get_config("tiny")


def reference_image() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (CONFIG.height, CONFIG.width, 3), dtype=np.uint8)


def generate(model: StreamingWorldModel) -> np.ndarray:
    model.reset(reference_image())
    return model.step()


def test_a_saved_checkpoint_reproduces_its_model(tmp_path):
    torch.manual_seed(3)
    original = StreamingWorldModel(CONFIG, seed=5)
    with torch.no_grad():  # make the control branch non-trivial so a lost key would show
        original.transformer.control_scale.fill_(0.37)
    original.transformer.save_pretrained(tmp_path / "transformer")
    original.vae.save_pretrained(tmp_path / "vae")

    loaded, described = load_streaming_model(CONFIG, str(tmp_path), "cpu", seed=5)
    assert described == f"checkpoint {tmp_path}, VAE control encoder, VAE decoder"
    assert loaded.transformer.control_scale.item() == pytest.approx(0.37)
    np.testing.assert_array_equal(generate(loaded), generate(StreamingWorldModel(
        CONFIG, transformer=original.transformer, vae=original.vae, seed=5)))


def test_a_checkpoint_without_vae_is_refused_with_the_reason(tmp_path):
    StreamingWorldModel(CONFIG).transformer.save_pretrained(tmp_path / "transformer")
    with pytest.raises(FileNotFoundError, match="transformer/ and vae/"):
        load_streaming_model(CONFIG, str(tmp_path), "cpu")


def test_without_a_checkpoint_the_model_is_random_and_says_so():
    _, described = load_streaming_model(CONFIG, "", "cpu")
    assert described.startswith("random weights")


def test_the_packaged_default_is_loaded_when_no_checkpoint_is_given():
    config = get_config("embedded_cpu")
    packaged = packaged_checkpoint("embedded_cpu")
    assert packaged is not None and (packaged / "MODEL_CARD.md").is_file()
    model, described = load_streaming_model(config, "", "cpu")
    assert described.startswith(f"packaged default checkpoint {packaged}")
    shipped = load_file(packaged / "transformer" / "diffusion_pytorch_model.safetensors")
    loaded = model.transformer.state_dict()
    assert set(shipped) <= set(loaded)
    for name in ("control_scale", "control_patch_embedding.weight", "proj_out.weight"):
        torch.testing.assert_close(loaded[name], shipped[name])
    assert loaded["control_patch_embedding.weight"].abs().sum() > 0  # trained: zero at initialisation


def test_the_node_serves_what_training_and_evaluation_load(tmp_path):
    """One checkpoint reader: the node's model holds, tensor for tensor, what evaluation and
    training load from the same directory (packaged default included)."""
    for config, checkpoint in ((CONFIG, None), (get_config("embedded_cpu"), packaged_checkpoint("embedded_cpu"))):
        if checkpoint is None:
            model = StreamingWorldModel(config, seed=2)
            model.transformer.save_pretrained(tmp_path / "transformer")
            model.vae.save_pretrained(tmp_path / "vae")
            checkpoint = tmp_path
        served, _ = load_streaming_model(config, str(checkpoint), "cpu")
        for name, module in (("transformer", load_or_build_transformer(config, str(checkpoint))),
                             ("vae", load_vae(config, str(checkpoint)))):
            evaluated = module.state_dict()
            loaded = getattr(served, name).state_dict()
            assert set(evaluated) <= set(loaded), name
            for key, tensor in evaluated.items():
                torch.testing.assert_close(loaded[key], tensor, rtol=0, atol=0, msg=f"{checkpoint}: {name}.{key}")


def _tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return dict(module.named_parameters()) | dict(module.named_buffers())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_loading_in_a_dtype_holds_the_cast_weights_and_a_float32_load_does_not_warn(tmp_path, caplog, dtype):
    """The node's bf16 (CUDA) and float32 (CPU) loads hold exactly the float32 checkpoint cast
    with `to(dtype)`, every module included. Diffusers warns on every `to(dtype)` of its models;
    a float32 load casts nothing and the VAE is read in its dtype, so only the transformer's real
    bf16 cast may warn."""
    model = StreamingWorldModel(CONFIG, seed=2)
    model.transformer.save_pretrained(tmp_path / "transformer")
    model.vae.save_pretrained(tmp_path / "vae")
    caplog.clear()
    loaded = {"transformer": load_or_build_transformer(CONFIG, str(tmp_path), dtype=dtype),
              "vae": load_vae(CONFIG, str(tmp_path), dtype=dtype)}
    warnings = caplog.text
    assert "AutoencoderKLWan that should be kept in float32" not in warnings
    assert ("RynnWorldTransformer that should be kept in float32" in warnings) == (dtype != torch.float32)
    for name, module in loaded.items():
        expected = _tensors(getattr(model, name))
        tensors = _tensors(module)
        assert set(tensors) == set(expected), name
        for key, tensor in expected.items():
            cast = tensor.to(dtype) if tensor.is_floating_point() else tensor
            assert tensors[key].dtype == cast.dtype, f"{name}.{key}"
            torch.testing.assert_close(tensors[key], cast, rtol=0, atol=0, msg=f"{name}.{key}")


def test_on_the_cpu_the_packaged_default_decodes_with_its_shipped_tiny_decoder():
    """decoder auto: the distilled tiny decoder shipped beside the VAE (its card: >= 30 dB against the VAE's
    decode on held-out clips) is what the node decodes with on the CPU; the VAE's decoder on request."""
    packaged = packaged_checkpoint("embedded_cpu")
    shipped = load_file(packaged / "tiny_decoder" / "diffusion_pytorch_model.safetensors")
    model, described = load_streaming_model(get_config("embedded_cpu"), "", "cpu", decoder="auto")
    assert described.endswith("tiny distilled decoder, composited on the reference"), described
    assert model.compositor is not None  # the robot's camera is fixed: static_camera defaults to true
    loaded = model.decoder.decoder.state_dict()  # the StreamingTinyDecoder's TinyVideoDecoder
    assert set(loaded) == set(shipped)
    for name, weights in shipped.items():
        torch.testing.assert_close(loaded[name], weights)
    card = (packaged / "MODEL_CARD.md").read_text()
    assert "Verdict: meets the bar (30 dB" in card
    model, described = load_streaming_model(get_config("embedded_cpu"), "", "cpu", decoder="vae", static_camera=False)
    assert described.endswith("VAE decoder"), described
    assert model.compositor is None


def test_on_the_cpu_the_packaged_default_encodes_control_frames_with_its_shipped_tiny_encoder():
    """encoder auto: the distilled tiny control encoder shipped beside the VAE (its card: end-to-end PSNR within
    0.3 dB of the VAE encoder's on held-out clips) encodes the skeletons on the CPU; the VAE's encoder on request."""
    packaged = packaged_checkpoint("embedded_cpu")
    shipped = load_file(packaged / "tiny_control_encoder" / "diffusion_pytorch_model.safetensors")
    model, described = load_streaming_model(get_config("embedded_cpu"), "", "cpu", encoder="auto")
    assert "tiny distilled control encoder" in described, described
    assert isinstance(model.encoder, StreamingTinyControlEncoder)
    loaded = model.encoder.encoder.state_dict()  # the StreamingTinyControlEncoder's TinyControlEncoder
    assert set(loaded) == set(shipped)
    for name, weights in shipped.items():
        torch.testing.assert_close(loaded[name], weights)
    card = (packaged / "MODEL_CARD.md").read_text()
    assert "## Tiny control encoder" in card and "Verdict: meets the bar (end-to-end PSNR within 0.3 dB" in card
    model, described = load_streaming_model(get_config("embedded_cpu"), "", "cpu", encoder="vae")
    assert "VAE control encoder" in described and isinstance(model.encoder, StreamingVAEEncoder)
