"""The data engine over several processes (on one machine or several): which batches this process
makes, and the two points where the processes meet.

`torchrun` and `accelerate launch` start N processes with RANK, WORLD_SIZE, LOCAL_RANK and the
rendezvous address in their environment; `join_launch` joins them in a gloo group (CPU messages
only, whatever the device the model runs on). Work is split by batch, not by episode: the batches
are planned over all source episodes (DataEngine.batches) and batch i belongs to rank i mod N, so a
batch's frames are the same whichever rank, and however many ranks, make them. The processes meet
twice: rank 0's source list is everyone's (only it exports recorder bags and hashes the sources),
and everyone waits for the slowest (adding up the episodes made) before rank 0 writes the final
manifest and the LeRobot dataset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# How long a finished process waits at the end for the slowest one (gloo's default is 30 minutes;
# a rank's share of a large data set takes hours).
SLOWEST_RANK_WAIT = timedelta(days=7)


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0  # the process's index on its machine: its GPU

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def owns(self, batch_index: int) -> bool:
        return batch_index % self.world_size == self.rank

    def device(self, device: str) -> str:
        """"cuda" means this process's own GPU when there are several processes."""
        return f"cuda:{self.local_rank}" if device == "cuda" and self.world_size > 1 else device

    def from_main(self, value):
        """Rank 0's `value`, on every rank."""
        if self.world_size == 1:
            return value
        box = [value if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def total(self, count: int) -> int:
        """The sum of every rank's `count`; all ranks wait here for the slowest."""
        if self.world_size == 1:
            return count
        total = torch.tensor([count], dtype=torch.int64)
        dist.all_reduce(total)
        return int(total)

    def leave(self) -> None:
        if self.world_size > 1 and dist.is_initialized():
            dist.destroy_process_group()


def join_launch() -> Ranks:
    """This process's place in a torchrun / accelerate launch (joined to the others), or the only process."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Ranks()
    dist.init_process_group("gloo", timeout=SLOWEST_RANK_WAIT)
    return Ranks(rank=dist.get_rank(), world_size=world_size, local_rank=int(os.environ.get("LOCAL_RANK", "0")))
