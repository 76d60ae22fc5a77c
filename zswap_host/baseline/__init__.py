"""The conventional-swap baseline: a model of Linux 6.1 swap on a conventional SSD."""

from .conventional import SWAP_CLUSTER_MAX, ConventionalSwap
from .readahead import SwapCache, VmaReadahead, merge_runs, swapin_nr_pages
from .slots import ClusterAllocator

__all__ = ["SWAP_CLUSTER_MAX", "ClusterAllocator", "ConventionalSwap", "SwapCache", "VmaReadahead",
           "merge_runs", "swapin_nr_pages"]
