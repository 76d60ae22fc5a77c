"""The device clocks: an emulated device's modeled clock, which its requests are charged to
(``ModelClock``), and a real device's wall clock (``WallClock``)."""

from __future__ import annotations

import time

import numpy as np


def _plain(a: np.ndarray) -> bool:
    """A flat contiguous int64 array: what the models' C functions read in place."""
    return a.dtype == np.int64 and a.ndim == 1 and a.flags.c_contiguous


class ModelClock:
    """What the emulated devices share: charging requests to the SSD model (``self.model``,
    None = timing off) and its clock."""

    model = None

    # ``handles``: FDP placement handles (an FdpSSD model only); None leaves them out of the call
    def _charge(self, op: int, offset: int, length: int, handles=None) -> None:
        if self.model is not None:
            self._charge_batch(op, np.array([offset], np.int64), np.array([length], np.int64), 1, handles)

    # the requests are the device's own, checked (aligned, inside it): a byte-addressed model whose
    # units the device's blocks are made of, as large as the device, takes them without checking
    # them again (``charge``); any other through ``submit``
    def _model_takes_checked(self) -> bool:
        ok = self.__dict__.get("_checked_ok")
        if ok is None:
            m = self.model
            g = getattr(self, "geometry", None)
            block, size = (g.block_size, g.size) if g is not None else (getattr(self, "block_size", 0),
                                                                        getattr(self, "size", 1 << 62))
            ok = self._checked_ok = getattr(m, "charge", None) is not None and block > 0 \
                and block % m.UNIT == 0 and size <= m.capacity
        return ok

    def _charge_batch(self, op: int, offsets: np.ndarray, lengths: np.ndarray, qd: int, handles=None) -> np.ndarray:
        m = self.model
        if m is None or offsets.size == 0:
            return np.zeros(offsets.size)
        if self._model_takes_checked() and _plain(offsets) and _plain(lengths):
            return m.charge(op, offsets, lengths, qd, handles)
        kw = {} if handles is None else {"handles": handles}
        return m.submit(np.full(offsets.size, op, np.uint8), offsets, lengths, qd, **kw)

    def _charge_groups(self, op: int, offsets: np.ndarray, lengths: np.ndarray, group_sizes: np.ndarray,
                       group_qds: np.ndarray, handles=None) -> np.ndarray:
        m = self.model
        if m is None or offsets.size == 0:
            return np.zeros(offsets.size)
        if self._model_takes_checked() and _plain(offsets) and _plain(lengths):
            return m.charge_groups(op, offsets, lengths, group_sizes, group_qds, handles)
        kw = {} if handles is None else {"handles": handles}
        return m.submit_groups(np.full(offsets.size, op, np.uint8), offsets, lengths, group_sizes,
                               group_qds, **kw)

    def now(self) -> float:
        """The device clock: modeled seconds (0 with the timing model off)."""
        return float(self.model.now) if self.model is not None else 0.0

    def advance(self, seconds: float) -> None:
        """Let host idle time pass on the modeled clock (a model with idle-time GC works in it)."""
        if self.model is not None and seconds > 0:
            self.model.advance(seconds)

    def timing_options(self) -> dict:
        """The SSD model's optional behaviours (``suspend``, ``idle_gc``) for ``describe()``."""
        return dict(self.model.options) if self.model is not None else {}

    def erase_counts(self) -> np.ndarray | None:
        """Wear: the SSD model's erases per physical erase block since it was built (int64; what
        an entry is depends on the model: ``ConvSSD``/``FdpSSD``, ``ZNSSSD`` or ``OcssdSSD``
        ``.erase_counts()``), or None with the timing model off.  ``devices.wear.wear_spread``
        sums it up."""
        if self.model is None:
            return None
        with self._lock:       # every emulated device has one; the model must not move under the copy
            return self.model.erase_counts()


class WallClock:
    """The clock of real devices: wall-clock seconds since the open (``_t0``, set by the device).
    Idle time passes by itself, so ``advance`` does nothing."""

    _t0: float = 0.0

    def now(self) -> float:
        """Wall-clock seconds since the device was opened."""
        return time.perf_counter() - self._t0

    def advance(self, seconds: float) -> None:
        """A no-op: real time passes without the host's help."""

    def erase_counts(self) -> None:
        """None: a real device does not report its erases per block."""
        return None

