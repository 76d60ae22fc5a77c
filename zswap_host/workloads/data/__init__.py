"""Real Criteo data for the trainer: the Kaggle ``train.txt`` and Terabyte ``day_N[.gz]`` text files and
facebookresearch/dlrm's preprocessed ``.npz``, streamed in chunks into the synthetic generator's
``Batch`` objects (:class:`CriteoFile`; see :mod:`.source` for the choices)."""

from .errors import DataFormatError
from .mapping import MAPPINGS, CategoricalMapper, IdMap
from .rows import Rows, log_dense
from .source import FORMATS, BatchStream, CriteoFile

__all__ = ["FORMATS", "MAPPINGS", "BatchStream", "CategoricalMapper", "CriteoFile", "DataFormatError", "IdMap",
           "Rows", "log_dense"]
