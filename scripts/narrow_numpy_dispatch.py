"""Switch numpy's AVX-512 loops off, for CI's second run of the float-sensitive tests.

numpy picks its ufunc loops when it is imported: on a CPU with AVX-512, ``expm1``,
``log1p``, ``exp`` and ``log`` on float64 are SVML's, elsewhere the C library's, and the
two differ in the last ulp on a few percent of arguments. A test that compares such a
value bit for bit with ``math`` (or with a constant pasted from one machine) passes on
one kind of machine and fails on the other. ``.ci/run`` therefore runs the tests marked
``float_kernels`` twice on an AVX-512 machine: once as installed, once with
``NPY_DISABLE_CPU_FEATURES`` naming numpy's AVX-512 dispatch targets, which gives the
loops of a machine without AVX-512.

    python scripts/narrow_numpy_dispatch.py names   # the value for NPY_DISABLE_CPU_FEATURES
    NPY_DISABLE_CPU_FEATURES=... python scripts/narrow_numpy_dispatch.py check

``names`` prints the AVX-512 targets the installed numpy dispatches to. The names
changed with numpy 2.4 (``X86_V4`` replaced ``AVX512F``/``AVX512CD``/``AVX512_SKX``;
``AVX512_ICL`` and ``AVX512_SPR`` stayed), and numpy ignores a name it does not dispatch
to with only an ``ImportWarning``, which Python hides by default; so the names are read
from the installed numpy, and a dispatch target this script does not know fails ``names``
(to be classified in the tables below) instead of being silently left on.

``check`` (run with the variable set) fails unless numpy parsed the variable without a
warning and every AVX-512 dispatch target is off; it prints the dispatch it sees.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import ModuleType

#: numpy's x86 dispatch targets that need AVX-512 (numpy 1.24-2.3 names, and 2.4's X86_V4)
AVX512_TARGETS = frozenset(
    {
        "X86_V4",
        "AVX512F",
        "AVX512CD",
        "AVX512_KNL",
        "AVX512_KNM",
        "AVX512_SKX",
        "AVX512_CLX",
        "AVX512_CNL",
        "AVX512_ICL",
        "AVX512_SPR",
    }
)

#: numpy's x86 dispatch targets below AVX-512 (left on: a machine without AVX-512 has them)
BELOW_AVX512 = frozenset(
    {
        "SSE",
        "SSE2",
        "SSE3",
        "SSSE3",
        "SSE41",
        "POPCNT",
        "SSE42",
        "AVX",
        "F16C",
        "FMA3",
        "AVX2",
        "XOP",
        "FMA4",
        "X86_V2",
        "X86_V3",
    }
)

VARIABLE = "NPY_DISABLE_CPU_FEATURES"


def _umath() -> ModuleType:
    try:
        from numpy._core import _multiarray_umath  # numpy >= 2
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath  # type: ignore[no-redef]
    return _multiarray_umath


def names() -> int:
    """Print the installed numpy's AVX-512 dispatch targets, space-separated."""
    if os.environ.get(VARIABLE):
        print(f"{VARIABLE} is already set: run `names` without it", file=sys.stderr)
        return 1
    import numpy

    dispatch = list(_umath().__cpu_dispatch__)
    unknown = [n for n in dispatch if n not in AVX512_TARGETS | BELOW_AVX512]
    if unknown:
        print(
            f"numpy {numpy.__version__} dispatches to {', '.join(unknown)}, which "
            f"{__file__} does not know: add each to AVX512_TARGETS or BELOW_AVX512",
            file=sys.stderr,
        )
        return 1
    targets = [n for n in dispatch if n in AVX512_TARGETS]
    if not targets:
        print(
            f"numpy {numpy.__version__} has no AVX-512 dispatch target "
            f"(it dispatches to {', '.join(dispatch) or 'nothing'}): nothing to switch off",
            file=sys.stderr,
        )
        return 1
    print(" ".join(targets))
    return 0


def check() -> int:
    """Fail unless numpy took ``NPY_DISABLE_CPU_FEATURES`` and runs no AVX-512 loop."""
    disabled = os.environ.get(VARIABLE, "").replace(",", " ").split()
    if not disabled:
        print(f"{VARIABLE} is not set", file=sys.stderr)
        return 1
    if "numpy" in sys.modules:
        print("numpy was imported before the check", file=sys.stderr)
        return 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import numpy
    problems = [f"numpy warned: {w.message}" for w in caught if VARIABLE in str(w.message)]
    umath = _umath()
    features, dispatch = umath.__cpu_features__, list(umath.__cpu_dispatch__)
    problems += [
        f"{name} is still on" for name in dispatch if name in AVX512_TARGETS and features[name]
    ]
    problems += [f"{name} is not a dispatch target" for name in disabled if name not in dispatch]
    if problems:
        print(f"{VARIABLE}={' '.join(disabled)} did not take effect:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    on = [n for n in dispatch if features.get(n)]
    print(
        f"numpy {numpy.__version__}: dispatch narrowed to {', '.join(on) or 'the baseline'}"
        f" ({', '.join(disabled)} off)"
    )
    return 0


def main(argv: list[str]) -> int:
    commands = {"names": names, "check": check}
    if len(argv) != 1 or argv[0] not in commands:
        print(f"usage: {sys.argv[0]} names|check", file=sys.stderr)
        return 2
    return commands[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
