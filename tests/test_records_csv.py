"""The column-wise ``%d``/``%.17g`` writer gives ``np.savetxt``'s bytes.

``records_csv.rows_text`` spells the 17 significant digits that a double-double
evaluation of |x|·10^k proves, and hands anything it cannot prove (near a rounding tie,
outside [1e-200, 1e200], subnormals) to Python's ``%``. The oracle here is ``%`` itself
(what ``np.savetxt`` calls per row), byte for byte.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from ampcalc.output import records_csv
from ampcalc.output.columns import savetxt_rows


def _python(cols: list[np.ndarray], int_first: bool) -> bytes:
    fmt = ",".join((["%d"] if int_first else ["%.17g"]) + ["%.17g"] * (len(cols) - 1))
    rows = zip(*(c.tolist() for c in cols), strict=True)
    return "".join(fmt % row + "\n" for row in rows).encode("ascii")


def _values() -> np.ndarray:
    rng = np.random.default_rng(20)
    bits = rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64)  # any double
    wide = 10.0 ** rng.uniform(-40, 40, 20_000) * rng.choice([-1.0, 1.0], 20_000)
    tens = np.array([10.0**k for k in range(-30, 31)])
    near_tens = np.concatenate([np.nextafter(tens, 0.0), np.nextafter(tens, np.inf)])
    # exact ties at the 17th digit: m·2^-j has j digits after the point
    ties = np.array([m * 2.0**-j for j in range(1, 70) for m in range(1, 20_001, 601)])
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -1e-310, 2.2250738585072014e-308,
         1.7976931348623157e308, 1e-200, 1e200, 1.0000000000000001e-200, 9.9999999999999995e-05,
         1e-4, 1e-5, 0.1, 0.5, 1 / 3, 1e16, 1e17, 123456789012345680.0, 99999999999999999.0]
    )  # fmt: skip
    ints = np.concatenate([np.arange(-300.0, 300.0), 2.0 ** np.arange(0, 80)])
    return np.concatenate([bits, wide, tens, near_tens, ties, special, ints, rng.random(20_000)])


def test_float_columns_are_python_percent_17g_byte_for_byte() -> None:
    x = _values()
    got = records_csv.rows_text([x], int_first=False)
    assert got == _python([x], False)
    # the same values as three columns of one table (rows mixing fast and slow cells)
    cols = [x, np.roll(x, 1), -x]
    assert records_csv.rows_text(cols, int_first=False) == _python(cols, False)


def test_int_column_is_percent_d_of_ints_and_floats() -> None:
    rng = np.random.default_rng(3)
    ints = np.concatenate([np.arange(0, 20_000), rng.integers(-(2**53), 2**53, 5_000), [0]])
    x = rng.random(ints.size)
    assert records_csv.rows_text([ints, x], int_first=True) == _python([ints, x], True)
    # blocks whose numbers all have one digit count (row numbers of a block)
    for same in (np.arange(5_000_000, 5_003_000), -np.arange(1000, 9000), np.zeros(3, int)):
        y = rng.random(same.size)
        assert records_csv.rows_text([same, y], int_first=True) == _python([same, y], True)
    floats = np.concatenate([ints[:1000].astype(float), [-3.7, 2.9, -0.0, 1e15 + 0.5]])
    y = rng.random(floats.size)
    assert records_csv.rows_text([floats, y], int_first=True) == _python([floats, y], True)


def test_unproven_roundings_are_left_to_python() -> None:
    # 1235·2^-20 = 0.00117778778076171875 exactly (18 significant digits): a tie at 17
    v = np.array([1235 * 2.0**-20, 0.1])
    _, _, ok = records_csv._significand(v)
    assert ok.tolist() == [False, True]
    want = b"0.0011777877807617188\n0.10000000000000001\n"  # "%.17g" % v (half to even)
    assert records_csv.rows_text([v], int_first=False) == want


@pytest.mark.parametrize("int_first", [True, False])
def test_savetxt_rows_is_np_savetxt(int_first: bool) -> None:
    rng = np.random.default_rng(5)
    block = np.column_stack([np.arange(1000.0), rng.normal(size=(1000, 3)) * 1e3])
    fmt = (["%d"] if int_first else ["%.17g"]) + ["%.17g"] * 3
    buf = io.StringIO()
    np.savetxt(buf, block, delimiter=",", fmt=fmt)
    assert savetxt_rows(block, int_first=int_first) == buf.getvalue()
    assert savetxt_rows(block[:0], int_first=int_first) == ""


def test_powers_of_ten_and_their_neighbours_are_proven() -> None:
    """Exact and rounded powers of ten, and the doubles next to them, over the whole
    range the arithmetic formats (10⁻²⁰⁰ .. 10²⁰⁰): the text is ``%``'s, and none
    but the true ties at the 17th digit is left to Python (values just below a power
    of ten used to bounce between two exponents and fall back)."""
    tens = np.array(
        [10.0**k for k in range(-200, 201)] + [float(f"1e{k}") for k in range(-200, 201)]
    )
    near = [np.nextafter(tens, 0.0), np.nextafter(tens, np.inf)]
    x = np.concatenate([tens, *near, np.nextafter(near[0], 0.0), np.nextafter(near[1], np.inf)])
    x = np.concatenate([x, -x, 3 * x, x / 3])
    assert records_csv.rows_text([x], int_first=False) == _python([x], False)
    v = np.abs(x)
    _, _, ok = records_csv._significand(v)
    fmt = [f"{w:.17e}" for w in v[~ok].tolist()]  # what Python was left
    exact = [f"{w:.40e}" for w in v[~ok].tolist()]
    # each is a tie: the 18th significant digit is 5 and nothing follows it
    assert all(e[18] == "5" and set(e[19 : e.index("e")]) <= {"0"} for e in exact), fmt
    assert ok[: 2 * 401].all()  # every power of ten itself is proven
