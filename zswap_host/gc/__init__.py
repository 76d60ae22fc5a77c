"""Host-side GC: the scheduler (when) and victim policies (what), with a registry for your own."""

from .policies import (VictimPolicy, ZoneTable, get_victim_policy, register_victim_policy,
                       victim_policies)
from .scheduler import GcScheduler

__all__ = ["GcScheduler", "VictimPolicy", "ZoneTable", "get_victim_policy", "register_victim_policy",
           "victim_policies"]
