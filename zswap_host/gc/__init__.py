"""Host-side GC: the scheduler (when), victim policies (what, with a registry for your own) and the
collector (how pages move)."""

from .collector import Collector, GcHost
from .policies import (VictimPolicy, ZoneTable, get_victim_policy, register_victim_policy,
                       victim_policies)
from .scheduler import GcScheduler

__all__ = ["Collector", "GcHost", "GcScheduler", "VictimPolicy", "ZoneTable", "get_victim_policy",
           "register_victim_policy", "victim_policies"]
