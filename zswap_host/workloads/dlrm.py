"""DLRM (facebookresearch/dlrm's structure) in PyTorch: the dense part; the embedding tables are a
``zswap_host.torch.SwappedEmbeddingBagCollection`` (``torch/training.py``'s ``Trainer`` puts the two together).

- bottom MLP over the 13 dense features (ReLU after every layer), output width = embedding dim;
- 26 embedding tables, sum pooling over each table's lookups (multi-hot);
- dot interaction: the pairwise dot products of the bottom output and the 26 pooled embeddings
  (strict lower triangle, no self-interaction), concatenated with the bottom output;
- top MLP (ReLU, last layer sigmoid), binary cross-entropy loss.

The embedding rows are not torch parameters: the collection gathers a batch's rows from its page
cache, pools them with torch's ``embedding_bag``, and its backward applies a fused optimizer
(SGD / row-wise Adagrad) to them. The MLPs train with torch SGD.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:  # pragma: no cover - the dlrm extra is optional
    raise ImportError("the DLRM workload needs PyTorch: pip install 'zswap-host[dlrm]' (torch==2.13.0)") from e

from .criteo import NUM_DENSE


@dataclass(frozen=True)
class ModelConfig:
    """``bottom``/``top``: hidden layer widths. The bottom MLP is 13-bottom...-dim, the top MLP is
    (dim + T(T+1)/2)-top...-1 for T tables. ``lr`` is the MLPs' SGD rate, ``emb_lr`` the embeddings'
    (``emb_optimizer`` ``sgd`` or row-wise ``adagrad``)."""

    dim: int = 16
    bottom: tuple[int, ...] = (512, 256, 64)
    top: tuple[int, ...] = (512, 256)
    lr: float = 0.1
    emb_lr: float = 0.1
    emb_optimizer: str = "sgd"
    name: str = "custom"

    def __post_init__(self) -> None:
        object.__setattr__(self, "bottom", tuple(int(x) for x in self.bottom))
        object.__setattr__(self, "top", tuple(int(x) for x in self.top))
        if self.emb_optimizer not in ("sgd", "adagrad"):
            raise ValueError(f"emb_optimizer must be 'sgd' or 'adagrad', not {self.emb_optimizer!r}")


MODEL_PRESETS: dict[str, ModelConfig] = {
    # tests: tiny MLPs
    "tiny": ModelConfig(dim=16, bottom=(32,), top=(32,), name="tiny"),
    # bench --quick / default: DLRM-shaped, narrower MLPs so compute stays seconds
    "small": ModelConfig(dim=16, bottom=(64, 32), top=(64, 32), name="small"),
    # facebookresearch/dlrm's Criteo Kaggle config: --arch-sparse-feature-size=16
    # --arch-mlp-bot=13-512-256-64-16 --arch-mlp-top=512-256-1
    "kaggle": ModelConfig(dim=16, bottom=(512, 256, 64), top=(512, 256), name="kaggle"),
    # MLPerf DLRM (Criteo Terabyte): dim 128, 13-512-256-128, 479-1024-1024-512-256-1
    "mlperf": ModelConfig(dim=128, bottom=(512, 256), top=(1024, 1024, 512, 256), name="mlperf"),
}


def model_preset(name: str, **overrides) -> ModelConfig:
    try:
        base = MODEL_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model preset {name!r}; known: {', '.join(MODEL_PRESETS)}") from None
    return replace(base, **overrides)


def _mlp(sizes: list[int], sigmoid_last: bool, gen: torch.Generator) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        n, m = sizes[i], sizes[i + 1]
        lin = nn.Linear(n, m, bias=True)
        with torch.no_grad():   # facebookresearch/dlrm's initialisation
            lin.weight.normal_(0.0, math.sqrt(2.0 / (m + n)), generator=gen)
            lin.bias.normal_(0.0, math.sqrt(1.0 / m), generator=gen)
        layers.append(lin)
        last = i == len(sizes) - 2
        layers.append(nn.Sigmoid() if (last and sigmoid_last) else nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """The dense part of DLRM. ``forward(dense, pooled)``: dense (B, 13) float32, pooled
    (B, T, dim) pooled embeddings; returns click probabilities (B,)."""

    def __init__(self, cfg: ModelConfig, num_tables: int, seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.num_tables = num_tables
        gen = torch.Generator().manual_seed(int(seed))
        d = cfg.dim
        self.bot = _mlp([NUM_DENSE, *cfg.bottom, d], sigmoid_last=False, gen=gen)
        n = num_tables + 1
        self.num_pairs = n * (n - 1) // 2
        self.top = _mlp([d + self.num_pairs, *cfg.top, 1], sigmoid_last=True, gen=gen)
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("_li", li, persistent=False)
        self.register_buffer("_lj", lj, persistent=False)

    def interact(self, x: torch.Tensor, ly: torch.Tensor) -> torch.Tensor:
        """Dot interaction: x (B, d), ly (B, T, d) -> (B, d + pairs)."""
        T = torch.cat([x.unsqueeze(1), ly], dim=1)
        Z = torch.bmm(T, T.transpose(1, 2))
        return torch.cat([x, Z[:, self._li, self._lj]], dim=1)

    def forward(self, dense: torch.Tensor, pooled: torch.Tensor) -> torch.Tensor:
        x = self.bot(dense)
        return self.top(self.interact(x, pooled)).squeeze(1)


def bce(prob: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy(prob, labels)
