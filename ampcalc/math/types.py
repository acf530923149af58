"""Type aliases shared by the package (numpy arrays and array-like inputs).

``FloatArray`` is what every vectorised kernel returns; ``ArrayLike`` is what they
accept (a float, a sequence or an array: anything ``np.asarray(x, dtype=float)``
takes), kept as ``Any`` because the kernels broadcast scalars and arrays alike.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
ArrayLike: TypeAlias = Any

__all__ = ["ArrayLike", "BoolArray", "FloatArray", "IntArray"]
