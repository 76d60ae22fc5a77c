"""The host-managed swap store."""

from .config import StoreConfig
from .store import SwapStore
from .summary import read_zone_summary, scan_zone_summaries

__all__ = ["StoreConfig", "SwapStore", "read_zone_summary", "scan_zone_summaries"]
