"""The store's id map (``store/idmap.py``) against a dict, with and without a known id space, and
the page images a trace replay writes (``workloads/page_words.py``)."""

import numpy as np
import pytest

from zswap_host.store import StoreConfig
from zswap_host.store.idmap import IdMap
from zswap_host.workloads.page_words import PageImages, PageVersions, first_words


@pytest.mark.parametrize("direct", [0, 5000])
@pytest.mark.parametrize("space", [3000, 1 << 40])
def test_idmap_agrees_with_a_dict_through_inserts_and_removes(direct, space):
    rng = np.random.default_rng(direct + space % 97)
    m, ref, free = IdMap(direct=direct), {}, set()
    for _ in range(60):
        ids = np.unique(rng.integers(0, space, rng.integers(1, 400)))
        new = ids[[int(i) not in ref for i in ids.tolist()]]
        h = m.insert(new)
        assert len(set(h.tolist())) == h.size and not set(h.tolist()) & set(ref.values())
        ref.update(zip(new.tolist(), h.tolist()))
        free -= set(h.tolist())
        gone = rng.choice(list(ref), min(len(ref), int(rng.integers(0, 200))), replace=False)
        hg = m.remove(np.array(sorted(gone), np.int64))
        assert sorted(hg.tolist()) == sorted(ref.pop(int(g)) for g in gone)
        free |= set(hg.tolist())
        probe = np.concatenate([np.array(list(ref), np.int64), rng.integers(0, space, 50)])
        assert m.lookup(probe).tolist() == [ref.get(int(i), -1) for i in probe.tolist()]
    assert m.n == len(ref)
    assert m.handles == len(ref) + len(free)       # discarded handles are reused before new ones


def test_idmap_widens_its_direct_array_only_by_doubling(monkeypatch):
    # ids spread over a space wider than the direct array may cover: it must not be copied (and
    # the hash table scanned) on nearly every insert as its bound creeps up with the ids held
    calls = []
    orig = IdMap._widen
    monkeypatch.setattr(IdMap, "_widen", lambda self, need, limit: (calls.append(need), orig(self, need, limit)))
    m = IdMap()
    rng = np.random.default_rng(3)
    order = rng.permutation(4_000_000)
    for k in range(0, 400_000, 2_000):
        m.insert(np.sort(order[k:k + 2_000]))
    assert len(calls) <= 12
    assert (m.lookup(order[:400_000]) >= 0).all()


def test_a_known_id_space_is_direct_from_the_start():
    m = IdMap(direct=1 << 20)
    h = m.insert(np.array([5, (1 << 20) - 1, 1 << 20], np.int64))
    assert m._hashed == 1                                   # only the id past the space hashes
    assert m.lookup(np.array([(1 << 20) - 1, 1 << 20, 7])).tolist() == [h[1], h[2], -1]
    with pytest.raises(ValueError, match="id_space"):
        StoreConfig(id_space=-1)


def test_page_images_reuse_their_buffer_and_keep_the_rest_zero():
    vers, img = PageVersions(100), PageImages(4096)
    a = img.of(vers.stamp(np.arange(10)))
    assert a.shape == (10, 4096) and not a[:, 8:].any()
    b = img.of(vers.stamp(np.array([3, 4])))
    assert np.shares_memory(a, b)                           # the same buffer, no new zero pages
    assert first_words(b).tolist() == vers.words(np.array([3, 4])).tolist() and not b[:, 8:].any()
    assert img.of(vers.stamp(np.arange(50))).shape == (50, 4096)   # grows when asked for more
