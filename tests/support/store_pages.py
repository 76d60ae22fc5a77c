"""Page contents the store's tests write: page ``i`` at version ``v`` holds distinct 64-bit words, so a
page read back from the wrong slot or the wrong version differs in every word."""

import numpy as np

PS = 4096


def pages_for(ids, version=0):
    ids = np.asarray(ids, np.int64)
    words = (ids[:, None] * 1000003 + version) * np.ones((1, PS // 8), np.int64) + np.arange(PS // 8)
    return words.view(np.uint8).reshape(ids.size, PS)
