"""The one .partial-then-rename writer that generated episodes, exported clips and training
checkpoints share: a directory appears complete or not at all."""

import pytest

from rynn_common.directories import directory_in_progress


def test_a_directory_appears_only_when_complete(tmp_path):
    final = tmp_path / "task" / "episode_0000"
    with pytest.raises(RuntimeError, match="crash"), directory_in_progress(final) as partial:
        (partial / "episode.json").write_text("{}")
        raise RuntimeError("crash while writing")
    assert not final.exists() and not partial.exists()
    with directory_in_progress(final) as partial:
        (partial / "episode.json").write_text("{}")
        assert not final.exists()
    assert (final / "episode.json").read_text() == "{}" and not partial.exists()


def test_a_rewrite_replaces_the_old_directory_whole(tmp_path):
    final = tmp_path / "step_00000010"
    with directory_in_progress(final) as partial:
        (partial / "old.txt").write_text("old")
    (final.with_name(final.name + ".partial")).mkdir()  # debris of an interrupted save
    with directory_in_progress(final) as partial:
        (partial / "new.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert not partial.exists()
