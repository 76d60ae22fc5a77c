"""Your own GC victim policy, swept on Ray against the built-in ones (docs/plugins.md). This file is
a plugin: `--plugin` loads it in the sweep and in every Ray worker, where it registers the policy.
`python examples/custom_victim_policy.py [--out DIR]` runs the one command at the bottom:

    zswap-host sweep --plugin examples/custom_victim_policy.py --victim greedy,cost-benefit,wear-aware ...
"""
import sys

import numpy as np

from zswap_host.gc import register_victim_policy


@register_victim_policy("wear-aware")
def wear_aware(table):
    """LFS cost-benefit, discounted for zones reset more often than the average zone."""
    if not len(table):
        return None
    u = table.utilization
    wear = table.resets / max(table.resets.mean(), 1.0)
    return int(table.zone[np.argmax((table.age + 1.0) * (1.0 - u) / (1.0 + u) / (1.0 + 0.5 * wear))])


if __name__ == "__main__":
    from zswap_host.cli import main
    main(["sweep", "--plugin", __file__, "--victim", "greedy,cost-benefit,wear-aware", "--executor", "ray",
          "--generate", "tiny", "--trace", "victim-sweep/trace", "--placement", "temporal",
          "--utilisation", "0.95", "--interface", "conventional", "--out", "victim-sweep", *sys.argv[1:]])
