"""The distilled tiny control encoder: it emits the VAE encoder's latent shapes and chunking, streaming a
clip in pieces gives the whole-clip encode, distillation on the tiny config learns the VAE's latents and
scores the live path end to end, the node's loader selects it (or refuses a checkpoint that has none)
and packaging ships it only above the bar."""

import json

import numpy as np
import pytest
import torch
from test_training_pipeline import make_vitra_clips

from rynn_world.model.configs import get_config
from rynn_world.model.tiny_encoder import TINY_ENCODER_DIR, StreamingTinyControlEncoder, TinyControlEncoder
from rynn_world.model.vae import StreamingVAEEncoder
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.config import DataConfig, OptimConfig, RunConfig, TinyEncoderConfig
from rynn_world.training.distill_tiny_encoder import distill_tiny_encoder

CONFIG = get_config("tiny")


def tiny_encoder(seed: int = 0) -> TinyControlEncoder:
    torch.manual_seed(seed)
    return TinyControlEncoder(latent_channels=CONFIG.latent_channels, frame_widths=(8, 8), latent_width=16).eval()


def frames(count: int, seed: int = 1) -> torch.Tensor:
    return torch.rand(1, 3, count, CONFIG.height, CONFIG.width, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def test_streaming_in_pieces_equals_the_whole_clip_with_the_vae_encoders_chunking():
    encoder = tiny_encoder()
    clip = frames(13)
    with torch.no_grad():
        whole, _ = encoder(clip)
    vae_latents = StreamingVAEEncoder(StreamingWorldModel(CONFIG).vae).push(clip)
    assert whole.shape == vae_latents.shape == (1, CONFIG.latent_channels, 4, *CONFIG.latent_size)
    stream = StreamingTinyControlEncoder(encoder)
    pieces = [stream.push(clip[:, :, a:b]) for a, b in ((0, 1), (1, 4), (4, 5), (5, 13))]
    assert pieces[1] is None and [p.shape[2] for p in pieces if p is not None] == [1, 1, 2]
    torch.testing.assert_close(torch.cat([p for p in pieces if p is not None], dim=2), whole, atol=1e-5, rtol=1e-5)
    stream.reset()
    torch.testing.assert_close(stream.push(clip[:, :, :1]), pieces[0])  # a reset starts a new stream
    with pytest.raises(ValueError, match="a stream start needs 1 \\+ a multiple of 4 frames, got 4"):
        encoder(clip[:, :, :4])


def test_the_previous_latent_changes_the_next_latent():
    """The memory blocks carry context across latents: same 4 frames, different history, different latent."""
    encoder = tiny_encoder(2)
    history, shared = frames(5, seed=3), frames(4, seed=4)
    outputs = []
    for start in (history, -history):
        stream = StreamingTinyControlEncoder(encoder)
        stream.push(start)
        outputs.append(stream.push(shared))
    assert (outputs[0] - outputs[1]).abs().max() > 1e-3


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    directory = tmp_path_factory.mktemp("teacher")
    model = StreamingWorldModel(CONFIG, seed=4)
    with torch.no_grad():  # a control branch that is not zero (it starts so), so the control encoder shows in the frames
        model.transformer.control_patch_embedding.weight.normal_(0.0, 0.2)
    model.transformer.save_pretrained(directory / "transformer")
    model.vae.save_pretrained(directory / "vae")
    return directory


def test_distillation_learns_the_vae_latents_scores_the_live_path_and_the_node_loads_it(tmp_path, teacher):
    data = DataConfig(kind="vitra", root=str(make_vitra_clips(tmp_path / "vitra", clips=1)), clip_frames=9, stride=8)
    cfg = TinyEncoderConfig(model="tiny", teacher_checkpoint=str(teacher), encoder={"frame_widths": [8, 8], "latent_width": 16},
                            data=data, eval_data=data, optim=OptimConfig(lr=3e-3, warmup_steps=2, decay="cosine"),
                            run=RunConfig(output_dir=str(tmp_path / "run"), steps=30, batch_size=2, progress=False))
    final = distill_tiny_encoder(cfg, resume=None)
    mse = [v for _, v in json.loads((tmp_path / "run" / "losses.json").read_text())["tiny_encoder/mse"]]
    assert np.mean(mse[-5:]) < 0.5 * np.mean(mse[:5])
    report = json.loads((final / "evaluation.json").read_text())
    latents, stream = report["held_out"]["latents"], report["held_out"]["end_to_end"]
    assert latents["clips"] > 0 and 0 < latents["relative_rms"] < 1
    assert stream["clips"] > 0 and stream["decoder"] == "vae"
    for key in ("vae_encoder_psnr_vs_frames_db", "tiny_encoder_psnr_vs_frames_db", "tiny_vs_vae_stream_psnr_db"):
        assert np.isfinite(stream[key]), key
    gap = stream["vae_encoder_psnr_vs_frames_db"] - stream["tiny_encoder_psnr_vs_frames_db"]
    assert report["meets_bar"] == (gap <= 0.3)

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    for part in ("transformer", "vae"):
        (checkpoint / part).symlink_to(teacher / part)
    (checkpoint / TINY_ENCODER_DIR).symlink_to(final / TINY_ENCODER_DIR)
    model, described = load_streaming_model(CONFIG, str(checkpoint), "cpu", encoder="auto")
    assert isinstance(model.encoder, StreamingTinyControlEncoder) and "tiny distilled control encoder" in described
    model.reset(np.full((CONFIG.height, CONFIG.width, 3), 90, dtype=np.uint8))
    assert model.step().shape == (4, CONFIG.height, CONFIG.width, 3)
    assert model.timings.last["encode"] > 0
    vae_model, described = load_streaming_model(CONFIG, str(checkpoint), "cpu", encoder="vae")
    assert isinstance(vae_model.encoder, StreamingVAEEncoder) and "VAE control encoder" in described


def test_asking_for_the_tiny_encoder_without_one_is_refused(teacher):
    with pytest.raises(FileNotFoundError, match="tiny_control_encoder/"):
        load_streaming_model(CONFIG, str(teacher), "cpu", encoder="tiny")
    with pytest.raises(ValueError, match="encoder must be one of"):
        load_streaming_model(CONFIG, str(teacher), "cpu", encoder="small")
    model, _ = load_streaming_model(CONFIG, str(teacher), "cpu", encoder="auto")
    assert isinstance(model.encoder, StreamingVAEEncoder)


def test_packaging_ships_only_within_the_bar_and_rewrites_its_card_section(tmp_path):
    from rynn_world.training.package_default import TINY_ENCODER_SECTION, TINY_SECTION, package_tiny_encoder

    run = tmp_path / "final"
    tiny_encoder().save_pretrained(str(run / TINY_ENCODER_DIR))
    target = tmp_path / "packaged"
    target.mkdir()
    (target / "MODEL_CARD.md").write_text(f"# card\n\n## Model\nx\n\n{TINY_SECTION}\nz\n\n## Limits\n- y\n")

    def report(tiny_db):
        stream = {"clips": 3, "decoder": "tiny", "vae_encoder_psnr_vs_frames_db": 22.0,
                  "tiny_encoder_psnr_vs_frames_db": tiny_db, "tiny_vs_vae_stream_psnr_db": 30.0}
        (run / "evaluation.json").write_text(json.dumps({
            "held_out": {"latents": {"clips": 3, "mse": 0.01, "relative_rms": 0.1}, "end_to_end": stream},
            "psnr_tolerance_db": 0.3, "meets_bar": 22.0 - tiny_db <= 0.3, "parameters": 1234,
            "config": {"data": {"episodes": [4, 12], "clip_frames": 17, "stride": 16}, "steps": 10,
                       "encoder": {"frame_widths": [8, 8], "latent_width": 16, "memory_blocks": 2}}}))

    report(21.5)
    with pytest.raises(ValueError, match="does not meet the bar \\(within 0.3 dB of the VAE encoder\\)"):
        package_tiny_encoder(run, tmp_path / "recipe.yaml", target)
    assert not (target / TINY_ENCODER_DIR).exists()
    for tiny_db in (21.8, 21.95):
        report(tiny_db)
        package_tiny_encoder(run, tmp_path / "recipe.yaml", target)
    card = (target / "MODEL_CARD.md").read_text()
    assert card.count(TINY_ENCODER_SECTION) == 1 and "tiny encoder 21.95 dB" in card and "21.80" not in card
    assert card.index(TINY_SECTION) < card.index(TINY_ENCODER_SECTION) < card.index("## Limits") and card.endswith("- y\n")
    assert TinyControlEncoder.from_pretrained(str(target / TINY_ENCODER_DIR)).config.latent_width == 16
