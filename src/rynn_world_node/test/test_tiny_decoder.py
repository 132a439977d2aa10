"""The distilled tiny decoder: streaming it latent by latent gives the whole-clip decode, it emits
the VAE decoder's frame counts, distillation on the tiny config learns the VAE's decode, and the
node's loader selects it (or refuses a checkpoint that has none)."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from test_training_pipeline import make_vitra_clips

from rynn_world.model.configs import get_config
from rynn_world.model.tiny_decoder import TINY_DECODER_DIR, StreamingTinyDecoder, TinyVideoDecoder
from rynn_world.model.vae import StreamingVAEDecoder
from rynn_world.nodes.model_loading import load_streaming_model
from rynn_world.streaming import StreamingWorldModel
from rynn_world.training.config import DataConfig, OptimConfig, RunConfig, TinyDecoderConfig
from rynn_world.training.distill_tiny_decoder import build_pairs, distill_tiny_decoder, inner, teacher_directory

CONFIG = get_config("tiny")


def tiny_decoder(seed: int = 0) -> TinyVideoDecoder:
    torch.manual_seed(seed)
    return TinyVideoDecoder(latent_channels=CONFIG.latent_channels, latent_width=16, frame_widths=(8, 8)).eval()


def test_streaming_latent_by_latent_equals_the_whole_clip_and_matches_the_vae_frame_counts():
    decoder = tiny_decoder()
    h, w = CONFIG.latent_size
    latents = torch.randn(1, CONFIG.latent_channels, 4, h, w, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        whole, _ = decoder(latents)
    stream = StreamingTinyDecoder(decoder)
    pieces = [stream.push(latents[:, :, i: i + 1]) for i in range(4)]
    assert [p.shape[2] for p in pieces] == [1, 4, 4, 4]
    vae_pieces = [StreamingVAEDecoder(StreamingWorldModel(CONFIG).vae).push(latents[:, :, :1]).shape]
    assert pieces[0].shape == vae_pieces[0]
    torch.testing.assert_close(torch.cat(pieces, dim=2), whole.clamp(-1, 1), atol=1e-5, rtol=1e-5)
    stream.reset()
    torch.testing.assert_close(stream.push(latents[:, :, :1]), pieces[0])  # a reset starts a new stream


def test_the_previous_latent_changes_the_next_frames():
    """The memory blocks carry context across latents: same latent, different history, different frames."""
    decoder = tiny_decoder(2)
    h, w = CONFIG.latent_size
    g = torch.Generator().manual_seed(3)
    a, b, shared = (torch.randn(1, CONFIG.latent_channels, 1, h, w, generator=g) for _ in range(3))
    outputs = []
    for history in (a, b):
        stream = StreamingTinyDecoder(decoder)
        stream.push(history)
        outputs.append(stream.push(shared))
    assert (outputs[0] - outputs[1]).abs().max() > 1e-3


def test_priming_on_a_reference_leaves_the_stream_where_pushing_it_does():
    """A stream's reference latent is primed (memory only, no frames); the frames after it are the
    frames after pushing it, and the VAE decoder's prime is its push too."""
    decoder = tiny_decoder(5)
    h, w = CONFIG.latent_size
    g = torch.Generator().manual_seed(6)
    reference, block = (torch.randn(1, CONFIG.latent_channels, 1, h, w, generator=g) for _ in range(2))
    pushed, primed = StreamingTinyDecoder(decoder), StreamingTinyDecoder(decoder)
    pushed.push(reference)
    assert primed.prime(reference) is None
    torch.testing.assert_close(primed.push(block), pushed.push(block), atol=0, rtol=0)
    vae = StreamingWorldModel(CONFIG).vae
    vae_pushed, vae_primed = StreamingVAEDecoder(vae), StreamingVAEDecoder(vae)
    vae_pushed.push(reference)
    vae_primed.prime(reference)
    torch.testing.assert_close(vae_primed.push(block), vae_pushed.push(block), atol=0, rtol=0)
    unprimed = StreamingTinyDecoder(decoder).push(block)
    assert unprimed.shape[2] == 1  # without the reference the block would start a stream


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    directory = tmp_path_factory.mktemp("teacher")
    model = StreamingWorldModel(CONFIG, seed=4)
    model.transformer.save_pretrained(directory / "transformer")
    model.vae.save_pretrained(directory / "vae")
    return directory


def test_distillation_learns_the_vae_decode_and_the_node_loads_it(tmp_path, teacher):
    data = DataConfig(kind="vitra", root=str(make_vitra_clips(tmp_path / "vitra", clips=1)), clip_frames=9, stride=8)
    cfg = TinyDecoderConfig(model="tiny", teacher_checkpoint=str(teacher), decoder={"latent_width": 16, "frame_widths": [8, 8]},
                            data=data, eval_data=data, optim=OptimConfig(lr=3e-3, warmup_steps=2, decay="cosine"),
                            run=RunConfig(output_dir=str(tmp_path / "run"), steps=30, batch_size=2, progress=False))
    final = distill_tiny_decoder(cfg, resume=None)
    psnrs = [v for _, v in json.loads((tmp_path / "run" / "losses.json").read_text())["tiny_decoder/psnr_db"]]
    assert np.mean(psnrs[-5:]) > np.mean(psnrs[:5]) + 3.0
    report = json.loads((final / "evaluation.json").read_text())
    assert set(report["held_out"]) == {"encoded", "generated"}
    for scores in report["held_out"].values():
        assert scores["clips"] > 0 and np.isfinite(scores["psnr_vs_vae_db"])
    assert report["meets_bar"] == (min(s["psnr_vs_vae_db"] for s in report["held_out"].values()) >= 30.0)

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    for part in ("transformer", "vae"):
        (checkpoint / part).symlink_to(teacher / part)
    (checkpoint / TINY_DECODER_DIR).symlink_to(final / TINY_DECODER_DIR)
    model, described = load_streaming_model(CONFIG, str(checkpoint), "cpu", decoder="auto")
    assert isinstance(model.decoder, StreamingTinyDecoder) and described.endswith("tiny distilled decoder")
    model.reset(np.full((CONFIG.height, CONFIG.width, 3), 90, dtype=np.uint8))
    assert model.step().shape == (4, CONFIG.height, CONFIG.width, 3)
    vae_model, described = load_streaming_model(CONFIG, str(checkpoint), "cpu", decoder="vae")
    assert isinstance(vae_model.decoder, StreamingVAEDecoder) and described.endswith("VAE decoder")


def test_a_vae_alone_teaches_on_encoder_latents_and_a_new_vae_is_never_scored_on_cached_decodes(tmp_path, teacher):
    vae_only = tmp_path / "vae_only"
    vae_only.mkdir()
    (vae_only / "vae").symlink_to(teacher / "vae")
    data = DataConfig(kind="vitra", root=str(make_vitra_clips(tmp_path / "vitra", clips=1)), clip_frames=9, stride=8)
    cfg = TinyDecoderConfig(model="tiny", teacher_checkpoint=str(vae_only), generated_fraction=0.0,
                            decoder={"latent_width": 16, "frame_widths": [8, 8]}, latent_crop=(6, 6), loss_margin=1,
                            data=data, eval_data=data, optim=OptimConfig(lr=3e-3, warmup_steps=2),
                            run=RunConfig(output_dir=str(tmp_path / "run"), steps=4, batch_size=2, progress=False))
    with pytest.raises(FileNotFoundError, match="generated_fraction=0"):
        teacher_directory(dataclasses.replace(cfg, generated_fraction=0.5))
    with pytest.raises(ValueError, match="loss_margin 3 needs a latent_crop"):
        distill_tiny_decoder(dataclasses.replace(cfg, loss_margin=3), resume=None)
    report = json.loads((distill_tiny_decoder(cfg, resume=None) / "evaluation.json").read_text())
    assert set(report["held_out"]) == {"encoded"}

    cache = tmp_path / "run" / "pairs_train.pt"
    stamp = cache.stat().st_mtime_ns
    old = build_pairs(data, cfg, vae_only, cache, "")
    assert cache.stat().st_mtime_ns == stamp and set(old[0]) == {"encoded"}  # same teacher: the cache
    retrained = tmp_path / "retrained"
    StreamingWorldModel(CONFIG, seed=9).vae.save_pretrained(retrained / "vae")
    new = build_pairs(data, dataclasses.replace(cfg, teacher_checkpoint=str(retrained)), retrained, cache, "")
    assert cache.stat().st_mtime_ns != stamp
    assert not np.array_equal(new[0]["encoded"]["target"], old[0]["encoded"]["target"])


def test_the_loss_margin_leaves_out_the_crop_edges():
    frames = torch.arange(2 * 3 * 20 * 30, dtype=torch.float32).reshape(2, 3, 1, 20, 30)
    kept = inner(frames, 8)
    assert kept.shape == (2, 3, 1, 4, 14)
    torch.testing.assert_close(kept, frames[..., 8:12, 8:22])
    assert inner(frames, 0).shape == frames.shape


def test_asking_for_the_tiny_decoder_without_one_is_refused(teacher):
    with pytest.raises(FileNotFoundError, match="tiny_decoder/"):
        load_streaming_model(CONFIG, str(teacher), "cpu", decoder="tiny")
    with pytest.raises(ValueError, match="decoder must be one of"):
        load_streaming_model(CONFIG, str(teacher), "cpu", decoder="small")
    model, _ = load_streaming_model(CONFIG, str(teacher), "cpu", decoder="auto")
    assert isinstance(model.decoder, StreamingVAEDecoder)


def test_packaging_ships_only_above_the_bar_and_rewrites_its_card_section(tmp_path):
    from rynn_world.training.package_default import TINY_SECTION, package_tiny_decoder

    run = tmp_path / "final"
    tiny_decoder().save_pretrained(str(run / TINY_DECODER_DIR))
    target = tmp_path / "packaged"
    target.mkdir()
    (target / "MODEL_CARD.md").write_text("# card\n\n## Model\nx\n\n## Limits\n- y\n")

    def report(psnr_db):
        scores = {"clips": 2, "psnr_vs_vae_db": psnr_db, "tiny_psnr_vs_frames_db": 25.0, "vae_psnr_vs_frames_db": 26.0}
        (run / "evaluation.json").write_text(json.dumps({
            "held_out": {"encoded": scores, "generated": dict(scores, psnr_vs_vae_db=psnr_db + 1)},
            "psnr_bar_db": 30.0, "meets_bar": psnr_db >= 30.0, "parameters": 1234,
            "config": {"data": {"episodes": [4, 12], "clip_frames": 17}, "steps": 10,
                       "decoder": {"latent_width": 16, "memory_blocks": 2, "frame_widths": [8, 8]}}}))

    report(29.0)
    with pytest.raises(ValueError, match="does not meet the 30 dB bar"):
        package_tiny_decoder(run, tmp_path / "recipe.yaml", target)
    assert not (target / TINY_DECODER_DIR).exists()
    for psnr_db in (31.0, 32.5):
        report(psnr_db)
        package_tiny_decoder(run, tmp_path / "recipe.yaml", target)
    card = (target / "MODEL_CARD.md").read_text()
    assert card.count(TINY_SECTION) == 1 and "| encoded | 2 | 32.50 |" in card and "31.00" not in card
    assert card.index(TINY_SECTION) < card.index("## Limits") and card.endswith("- y\n")
    assert TinyVideoDecoder.from_pretrained(str(target / TINY_DECODER_DIR)).config.latent_width == 16


def test_a_distillation_starts_from_a_given_tiny_decoder_of_its_architecture(tmp_path):
    from rynn_world.training.distill_tiny_decoder import initial_decoder

    shipped = tmp_path / "packaged"
    tiny_decoder(7).save_pretrained(str(shipped / TINY_DECODER_DIR))
    cfg = TinyDecoderConfig(model="tiny", decoder={"latent_width": 16, "frame_widths": [8, 8]}, init_checkpoint=str(shipped))
    started = initial_decoder(cfg, CONFIG).state_dict()
    assert all(torch.equal(started[k], v) for k, v in tiny_decoder(7).state_dict().items())
    fresh = initial_decoder(dataclasses.replace(cfg, init_checkpoint=""), CONFIG).state_dict()
    assert any(not torch.equal(fresh[k], v) for k, v in started.items())
    with pytest.raises(ValueError, match="not a tiny decoder of the config's architecture"):
        initial_decoder(dataclasses.replace(cfg, decoder={"latent_width": 32, "frame_widths": [8, 8]}), CONFIG)
