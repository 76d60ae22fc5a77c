"""Checkpoints at the edges (issue 34): a save that fails leaves the checkpoint it would have
replaced loadable (it is written beside the target and renamed into place); a load that is
refused (a damaged file, a wrong shape) has changed nothing, not even the pending step; a target
directory holding files that are not a checkpoint's is refused before anything is written."""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from zswap_host import StoreConfig, SwapStore, open_device  # noqa: E402
from zswap_host.errors import DeviceIOError  # noqa: E402
from zswap_host.torch import SwappedEmbeddingBagCollection  # noqa: E402

torch.set_num_threads(1)

TABLES = [(20000, 16), (6000, 8)]      # 360 pages; the store writes 128 KiB units: most reach the device


def module(optimizer="adagrad"):
    dev = open_device("emu://?zones=64&zone_size=1MiB&preset=none")
    store = SwapStore(dev, StoreConfig(write_size=128 << 10))
    m = SwappedEmbeddingBagCollection(TABLES, keys=["p", "q"], backend=store, budget=0.2,
                                      optimizer=optimizer, lr=0.05, seed=3)
    return m, dev


def train(m, steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        feats = {k: torch.from_numpy(rng.integers(0, n, (16, 3))) for k, (n, _) in zip("pq", TABLES)}
        m(feats, concat=True).pow(2).sum().backward()


def rows(m):
    return [m.read_rows(k, torch.arange(n)).clone() for k, (n, _) in zip("pq", TABLES)]


def test_a_failed_second_save_leaves_the_first_loadable(tmp_path):
    m, dev = module()
    train(m, 3)
    d = str(tmp_path / "ck")
    m.save(d)
    first, first_steps = rows(m), m.stats()["steps"]
    train(m, 3, seed=1)
    assert not all(torch.equal(a, b) for a, b in zip(first, rows(m)))
    dev.inject_read_failures(1000, after=5)           # the second save fails part way
    with pytest.raises(DeviceIOError):
        m.save(d, chunk_bytes=16 << 10)
    dev.inject_read_failures(0)
    assert sorted(os.listdir(tmp_path)) == ["ck"]      # no temporary directory left behind
    m2, _ = module()
    m2.load(d)
    assert all(torch.equal(a, b) for a, b in zip(first, rows(m2)))
    assert m2.stats()["steps"] == first_steps
    m.save(d)                                          # a save that succeeds replaces it whole
    m2.load(d)
    assert all(torch.equal(a, b) for a, b in zip(rows(m), rows(m2)))


def test_save_refuses_a_directory_that_is_not_a_checkpoint(tmp_path):
    m, _ = module()
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("my notes")
    with pytest.raises(ValueError, match="notes.txt"):
        m.save(str(d))
    assert sorted(os.listdir(d)) == ["notes.txt"] and (d / "notes.txt").read_text() == "my notes"
    assert sorted(os.listdir(tmp_path)) == ["mine"]
    f = tmp_path / "file"
    f.write_text("data")
    with pytest.raises((ValueError, NotADirectoryError, FileExistsError)):
        m.save(str(f))
    assert f.read_text() == "data"
    (tmp_path / "empty").mkdir()
    m.save(str(tmp_path / "empty"))                    # an empty directory is fine
    assert "meta.json" in os.listdir(tmp_path / "empty")


@pytest.mark.parametrize("damage", ["shape", "truncated", "missing"])
def test_a_refused_load_changes_nothing(tmp_path, damage):
    m, _ = module("adam")
    train(m, 2)
    d = tmp_path / "ck"
    m.save(str(d))
    train(m, 2, seed=1)                                # the module now differs from the checkpoint
    feats = {"p": torch.tensor([[1, 2]]), "q": torch.tensor([[3, 4]])}
    out = m(feats, concat=True)                        # a pending step
    before, steps = rows(m), m.stats()["steps"]
    f = d / "t1.exp_avg.npy"                           # table 1's file: table 0 would load first
    if damage == "shape":
        np.save(f, np.zeros((5, 8), np.float32))
    elif damage == "truncated":
        os.truncate(f, os.path.getsize(f) // 2)
    else:
        f.unlink()
    with pytest.raises((ValueError, OSError)):
        m.load(str(d))
    assert all(torch.equal(a, b) for a, b in zip(before, rows(m)))
    assert m.stats()["steps"] == steps
    out.pow(2).sum().backward()                        # the pending step was not ended
    assert m.stats()["steps"] == [s + 1 for s in steps]


def test_replacing_without_renameat2_leaves_one_directory(tmp_path, monkeypatch):
    """Where the atomic exchange is missing the old directory is renamed aside first, then removed."""
    from zswap_host.torch import atomic_dir

    monkeypatch.setattr(atomic_dir, "_exchange", lambda a, b: False)
    m, _ = module()
    d = str(tmp_path / "ck")
    m.save(d)
    train(m, 2)
    m.save(d + "/")                                    # a trailing slash names the same directory
    assert sorted(os.listdir(tmp_path)) == ["ck"]
    m2, _ = module()
    m2.load(d)
    assert all(torch.equal(a, b) for a, b in zip(rows(m), rows(m2)))
