"""Your own DLRM training loop with its embedding tables swapped to a ZNS store (zswap_host.torch).

    python examples/train_dlrm.py --data tests/data/criteo-sample.txt [--device emu://...] [--steps 50]
"""
import argparse

import torch
from torch import nn

from zswap_host import SwapStore, open_device
from zswap_host.torch import SwappedEmbeddingBagCollection, prefetching
from zswap_host.workloads.criteo import KAGGLE_TABLES, scale_tables
from zswap_host.workloads.data import CriteoFile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--data", required=True, help="Criteo Kaggle train.txt, Terabyte day_N or dlrm .npz")
ap.add_argument("--device", default="emu://?zones=96&zone_size=4MiB&preset=thesis-ssd", help="ZNS device")
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--batch-size", type=int, default=128)
ap.add_argument("--budget", default="10%", help="DRAM for the tables (share of their bytes)")
a = ap.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)

tables = scale_tables(KAGGLE_TABLES, 0.01)                      # 26 tables, 330k rows
data = CriteoFile(a.data, tables).batches(a.steps, a.batch_size)
store = SwapStore(open_device(a.device))
emb = SwappedEmbeddingBagCollection(tables, embedding_dim=16, mode="sum", backend=store, budget=a.budget,
                                    optimizer="adagrad", lr=0.05)
bottom = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 16), nn.ReLU())
top = nn.Sequential(nn.Linear(16 * 27, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD([*bottom.parameters(), *top.parameters()], lr=0.1)


def features(b):                                                # table t's single-hot lookups
    return {f"t{t}": torch.from_numpy(b.sparse[t]) for t in range(len(tables))}


for i, b in enumerate(prefetching(data, emb, depth=1, lookups=features)):
    x = torch.cat([bottom(torch.from_numpy(b.dense)), emb(features(b), concat=True)], dim=1)
    loss = nn.functional.binary_cross_entropy_with_logits(top(x).squeeze(1), torch.from_numpy(b.labels))
    opt.zero_grad()
    loss.backward()                                             # also updates the swapped rows
    opt.step()
    if i % 10 == 0 or i == a.steps - 1:
        print(f"step {i:4d}  loss {loss.item():.4f}")

s = emb.stats()
print(f"pages: {s['faults']} swapped in ({s['prefetched']} ahead of need), {s['pages_written']} out; "
      f"resident {s['resident_pages']} of {s['total_pages']}; store WAF {store.stats().write_amplification:.2f}")
emb.close()
store.close()
