"""Directories that appear complete or not at all (episodes, exported clips, training checkpoints)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def directory_in_progress(final: Path) -> Iterator[Path]:
    """A fresh ``<final>.partial`` directory to fill (one left by an interrupted run is deleted).

    When the block completes it replaces ``final`` (an older ``final`` is deleted first); when it
    fails it is deleted, so a crash never leaves a directory that looks complete."""
    final = Path(final)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
