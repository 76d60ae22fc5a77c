"""Sharded DLRM training on ``torch.distributed`` (issue 16, part 2): the tables split over ranks
(``sharding``), each rank's tables in its own page cache over its own backend and device, the pooled
embeddings moved to the samples' ranks and their gradients back with all-to-all (``rank``), the
dense part data-parallel, and the processes started here or by ``torchrun`` (``launch``);
``zswap-host bench --ranks N`` trains its runs that way (``bench``)."""

from .launch import DistSpec, RankFailed, run_distributed
from .sharding import Shard, ShardPlan, plan_shards

__all__ = ["DistSpec", "RankFailed", "Shard", "ShardPlan", "plan_shards", "run_distributed"]
