"""The conventional-swap baseline: a model of Linux 6.1 swap on a conventional SSD."""

from .conventional import ConventionalSwap
from .readahead import SwapCache, VmaReadahead, merge_runs, swapin_nr_pages
from .reclaim import SWAP_CLUSTER_MAX
from .slots import ClusterAllocator

__all__ = ["SWAP_CLUSTER_MAX", "ClusterAllocator", "ConventionalSwap", "SwapCache", "VmaReadahead",
           "merge_runs", "swapin_nr_pages"]
