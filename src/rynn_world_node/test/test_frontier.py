"""The model-size / speed frontier report: each variant's depth, patch and size read from its checkpoint,
its served scores over copying and its graph figures in the table, the plot drawn, the card section
(re)written in place, and the card's earlier points kept beside new ones."""

import json

import pytest

from rynn_world.evaluation.frontier import PLOT, POINTS, SECTION, main
from rynn_world.model.configs import get_config
from rynn_world.training.export import load_or_build_transformer
from rynn_world.training.grow_depth import grow_depth
from rynn_world.training.refine_patches import refine_patches

CONFIG = get_config("tiny")


def _summary(psnr: float, copy: float = 20.0) -> dict:
    return {"methods": {"copy_reference": {"all": {"psnr": copy, "ssim": 0.85}},
                        "student_no_dmd": {"all": {"psnr": psnr, "ssim": 0.8}}},
            "grounding": {"all": {"psnr_gap": 0.5}},
            "interaction": {"all": {"copy_reference": 13.0, "student_no_dmd": 13.5}}}


def _variant(directory, layers: int, task_psnr: float, fps: list[float], fine: bool = False):
    transformer = load_or_build_transformer(CONFIG, None)
    if layers != len(transformer.blocks):
        transformer = grow_depth(transformer, layers)
    if fine:
        transformer = refine_patches(transformer, (1, 1, 1))
    transformer.save_pretrained(str(directory / "checkpoint" / "transformer"))
    for part, psnr in (("tasks", task_psnr), ("sim", 22.0)):
        (directory / part).mkdir(parents=True)
        (directory / part / "results.json").write_text(json.dumps({"summary": _summary(psnr)}))
    for run, f in enumerate(fps):  # one file per graph start, as the recipe alternates the variants
        window = {"mode": "digital", "fps": f, "age_p50": 240.0, "age_p99": 380.0, "command_p99": 9.0, "budgeted": 60.0,
                  "idle": 70.0, "cpu": {"world_model_node": 40.0 + layers}}
        (directory / f"graph_{run}.json").write_text(json.dumps({"runs": [[window]]}))
    return str(directory)


def test_the_frontier_table_plot_and_card_section(tmp_path, capsys):
    small = _variant(tmp_path / "small", 2, 20.5, [16.0, 15.9, 15.7])
    deep = _variant(tmp_path / "deep", 4, 21.25, [14.0, 13.0])
    card = tmp_path / "card"
    card.mkdir()
    (card / "MODEL_CARD.md").write_text("# card\n\n## Model\ntext\n\n## Limits\n- small\n")
    arguments = ["--variant", "2 blocks", small, "--variant", "4 blocks", deep, "--out", str(tmp_path / "out"), "--card", str(card),
                 "--verdict", "Ships: 2 blocks."]
    main(arguments)
    lines = (tmp_path / "out" / "frontier.md").read_text().splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| variant")]
    assert rows[0].startswith("| 2 blocks | 2 | 2x2 |") and "| 20.50 / 0.800 (20.00 / 0.850) |" in rows[0]
    assert "| 15.9 (15.7-16.0) | 240 | 42 |" in rows[0]  # median (range) of the starts, the world model's CPU
    assert rows[1].startswith("| 4 blocks | 4 | 2x2 |") and "| 21.25 / 0.800" in rows[1]
    assert "| 13.5 (13.0-14.0) | 240 | 44 |" in rows[1]
    small_size, deep_size = (float(row.split("|")[4].strip().split()[0]) for row in rows)
    assert deep_size > small_size
    assert (tmp_path / "out" / PLOT).stat().st_size > 10_000 and (card / PLOT).is_file()
    text = (card / "MODEL_CARD.md").read_text()
    assert text.index(SECTION) < text.index("Ships: 2 blocks.") < text.index("## Limits") and text.count(SECTION) == 1
    main(arguments)  # rewritten in place, not appended
    assert (card / "MODEL_CARD.md").read_text().count(SECTION) == 1


def test_the_cards_earlier_points_stay_and_a_remeasured_one_is_replaced(tmp_path):
    card = tmp_path / "card"
    card.mkdir()
    (card / "MODEL_CARD.md").write_text("# card\n\n## Limits\n- small\n")
    main(["--variant", "2 blocks", _variant(tmp_path / "small", 2, 20.5, [16.0]), "--variant", "4 blocks",
          _variant(tmp_path / "deep", 4, 21.25, [14.0]), "--out", str(tmp_path / "first"), "--card", str(card)])
    fine = _variant(tmp_path / "fine", 2, 22.0, [12.0, 12.5], fine=True)
    again = _variant(tmp_path / "again", 2, 20.75, [15.0])
    main(["--variant", "2 blocks, patch 1x1", fine, "--variant", "2 blocks", again, "--out", str(tmp_path / "second"),
          "--card", str(card)])
    points = json.loads((card / POINTS).read_text())
    assert [p["name"] for p in points] == ["4 blocks", "2 blocks, patch 1x1", "2 blocks"]
    assert [p["task"]["psnr"] for p in points] == [21.25, 22.0, 20.75]  # the re-measured point, not the first
    assert points[1]["patch"] == [1, 1, 1] and points[1]["fps"] == [12.25, 12.0, 12.5]
    assert points[1]["parameters"] < points[0]["parameters"]
    rows = [line for line in (card / "MODEL_CARD.md").read_text().splitlines() if line.startswith("| 2 blocks, patch")]
    assert len(rows) == 1 and rows[0].startswith("| 2 blocks, patch 1x1 | 2 | 1x1 |") and "| 22.00 / 0.800" in rows[0]


def test_a_variant_without_its_graph_figures_is_an_error_naming_the_file(tmp_path):
    small = _variant(tmp_path / "small", 2, 20.5, [16.0])
    (tmp_path / "small" / "graph_0.json").unlink()
    with pytest.raises(FileNotFoundError, match="graph"):
        main(["--variant", "2 blocks", small, "--out", str(tmp_path / "out")])
