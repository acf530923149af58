"""Floats in sweep and table output: the orjson fast path writes ``float.__repr__``'s
text exactly (the JSON and CSV contract: shortest round trip, Python's spelling).

orjson prints the same shortest round-trip digits but spells exponents ``e-7``/``e16``
and writes [1e-5, 1e-4) positionally; ``output.float_text`` respells them. The oracle is
``float.__repr__`` itself, over random bit patterns (every exponent, subnormals) and the
boundaries of each spelling; without orjson the writer takes ``repr`` directly.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from ampcalc.analyses import sweep as sw
from ampcalc.output import columns as C
from ampcalc.output import float_text as F

pytestmark = pytest.mark.skipif(F._ORJSON is None, reason="orjson not installed")


def _repr(arr: np.ndarray, null: str) -> list[str]:
    return [null if v != v else float.__repr__(v) for v in arr.tolist()]


def _edges() -> np.ndarray:
    out = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for edge in (1e-5, 1e-4, 1e16, 1e15, 1e21, 1e22, 1e-7, 1e-10, 1e100, 1e-100):
        for k in range(-3, 4):
            v = edge
            for _ in range(abs(k)):
                v = np.nextafter(v, np.inf if k > 0 else 0.0)
            out += [float(v), -float(v)]
    for d in range(1, 10):  # one-digit mantissas and exponents: 3e-05, 7e+16, 2e-09
        out += [d * 1e-5, d * 1e-9, d * 1e16, d * 1e-100, d * 1e-300, -d * 1e-5]
    return np.array([*out, np.nan, np.inf, -np.inf])


def test_orjson_texts_are_repr_texts() -> None:
    rng = np.random.default_rng(20261126)
    bits = rng.integers(0, 2**64, 100_000, dtype=np.uint64)
    random_doubles = bits.view(np.float64)
    scaled = rng.standard_normal(30_000) * 10.0 ** rng.integers(-20, 20, 30_000)
    decade = rng.uniform(1e-5, 1e-4, 20_000) * rng.choice([-1.0, 1.0], 20_000)
    for arr in (random_doubles, scaled, decade, _edges(), np.geomspace(1e-6, 800, 20_000)):
        for null in ("null", ""):
            got, want = F.float_texts(arr, null), _repr(arr, null)
            assert len(got) == len(want)
            # the first differences only: a diff of 10⁵ strings takes pytest minutes
            wrong = [(g, w) for g, w in zip(got, want, strict=True) if g != w][:5]
            assert not wrong, wrong
    assert F.float_texts(np.zeros(0), "") == []
    assert F.float_texts(np.array([3e-05, 7e16, 1e-7]), "") == ["3e-05", "7e+16", "1e-07"]


def test_without_orjson_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import EXAMPLES

    from ampcalc.designs.document import parse_yaml

    path = EXAMPLES / "srswor.yaml"
    doc = parse_yaml(path.read_text(), filename=str(path))
    result = sw.evaluate(doc, [sw.parse_vary("mechanism.epsilon=1e-9:1e6:3000:log")])
    result.columns["large"] = result.columns["epsilon"] * 1e16  # up to 1e+22
    monkeypatch.setattr(C, "CHUNK", 700)

    def both() -> tuple[str, str]:
        buf = io.StringIO()
        C.sweep_csv(result, buf)
        chunks = C.sweep_json_chunks(result, "9.9")
        assert chunks is not None
        return C.text(chunks), buf.getvalue()

    fast = both()
    monkeypatch.setattr(F, "_ORJSON", None)
    assert both() == fast
    assert "e-05" in fast[0] and "e+" in fast[0]  # both respellings were exercised


def test_the_installed_orjson_is_used_and_a_differing_one_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # orjson 3.8 writes "1e16", 3.10+ "1e+16": both are respelt to repr's "1e+16"
    assert F._orjson_ok()
    assert F.float_texts(np.array([1e16, 7e-7]), "") == ["1e+16", "7e-07"]

    class Odd:  # an orjson whose spelling the respelling does not know
        OPT_SERIALIZE_NUMPY = 0

        @staticmethod
        def dumps(a: np.ndarray, option: int = 0) -> bytes:
            return ("[" + ",".join(f"{v:.3E}" for v in a.tolist()) + "]").encode()

    monkeypatch.setattr(F, "_ORJSON", Odd)
    monkeypatch.setattr(F, "_ORJSON_OK", [])
    assert not F._orjson_ok()
    assert F.float_texts(np.array([0.1, 1e16]), "") == ["0.1", "1e+16"]


def test_signed_exponents_of_newer_orjson_are_respelt_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # orjson 3.10+ writes "1e+16" where older releases write "1e16": the installed one
    # shows one spelling, this stand-in the other (the same digits, the exponent signed)
    import re

    real = F._ORJSON

    class Signed:
        OPT_SERIALIZE_NUMPY = real.OPT_SERIALIZE_NUMPY

        @staticmethod
        def dumps(a: np.ndarray, option: int = 0) -> bytes:
            return re.sub(rb"e(\d)", rb"e+\1", real.dumps(a, option=option))

    monkeypatch.setattr(F, "_ORJSON", Signed)
    monkeypatch.setattr(F, "_ORJSON_OK", [])
    assert F._orjson_ok()
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64)
    for arr in (bits, _edges(), np.geomspace(1e-9, 1e22, 5_000)):
        got, want = F.float_texts(arr, "null"), _repr(arr, "null")
        wrong = [(g, w) for g, w in zip(got, want, strict=True) if g != w][:5]
        assert not wrong, wrong
    assert F.float_bytes(np.array([3e-05, 7e16, 1e-7, 0.5])) == b"3e-05,7e+16,1e-07,0.5"
