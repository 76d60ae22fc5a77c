"""One paged region: an anonymous mapping registered with the pager's userfaultfd, and the
numpy view of it handed to the caller."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Region:
    """Pages ``[first_page, first_page + npages)`` of the pager, mapped at ``addr``; backend ids
    are ``id_base + page``. ``stream`` is the placement hint its pages are written with."""

    addr: int
    npages: int
    first_page: int
    page_size: int
    stream: int

    @property
    def nbytes(self) -> int:
        return self.npages * self.page_size

    def contains(self, addr: int) -> bool:
        return self.addr <= addr < self.addr + self.nbytes

    def array(self, ffi, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A writable numpy array of ``shape``/``dtype`` over the start of the region (the array
        keeps the cffi buffer alive, not the mapping: see ``Pager.close``)."""
        buf = ffi.buffer(ffi.cast("char *", self.addr), self.nbytes)
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)
