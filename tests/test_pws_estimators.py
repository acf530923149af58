"""Cohen et al. 2021, §7.1 and §8.1: the unbiased estimator, sampled-SbH's bias and
variance, and the expected number of reported keys (Fig. 2 and 4), against mpmath and
brute-force oracles (spec importance-and-weighted-sampling.md B8–B12)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from conftest import run_ampcalc

from ampcalc.math import pws as K
from ampcalc.model.errors import DesignError
from ampcalc.records import pws_estimators as E
from ampcalc.schemes import pws


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """The tests below raise mpmath's precision; other modules' oracles rely on theirs."""
    old = mp.mp.dps
    yield
    mp.mp.dps = old


def params(eps: float, delta: float, method: str = "none", tau: float = 1.0) -> pws.Params:
    return pws.Params(method=method, threshold=tau, epsilon=eps, delta=delta)


def test_unbiased_estimator_paper_setting() -> None:
    # 004 §7.1 (spec B8): ε = 1, δ = 1e-3, q ≡ 1, g(i) = i: a_1 = 1000, a_2 = −718.28,
    # a_3 = −2437, a_8 = 8.56e5; oracle: the triangular system solved in mpmath
    p = params(1.0, 1e-3)
    rows = E.rows_past(p, 10)
    a = E.unbiased_estimates(rows, upto=10)
    assert a[0] == pytest.approx(1000.0, rel=1e-12)
    assert a[1] == pytest.approx(-718.28, abs=5e-3)
    assert a[2] == pytest.approx(-2437, rel=1e-3)
    assert a[7] == pytest.approx(8.56e5, rel=1e-3)
    mp.mp.dps = 40
    m = mp.matrix(10, 10)
    for i in range(1, 11):
        row = rows.dense(i)
        for j in range(1, i + 1):
            m[i - 1, j - 1] = mp.mpf(float(row[j]))
    exact = mp.lu_solve(m, mp.matrix([mp.mpf(i) for i in range(1, 11)]))
    for k in range(10):
        assert a[k] == pytest.approx(float(exact[k]), rel=1e-9)
    # unbiased: zero bias at every frequency; variance at i = 1 is (1 − δ)/δ·1 = 999
    acc = E.accuracy(p, 10)
    assert all(abs(r["bias_unbiased"]) < 1e-6 * max(1.0, abs(r["a_unbiased"])) for r in acc)
    assert acc[0]["variance_unbiased"] == pytest.approx(999.0, rel=1e-12)


def test_mle_rows_match_paper_vectors() -> None:
    # spec B12 (MLE, q ≡ 1, ε = 1, δ = 1e-3): Bias_1 = −0.989022, Var_1 = 0.120398;
    # i = 4: −3.67543 / 3.29118; i = 7: −0.353431 / 25.5111
    acc = E.accuracy(params(1.0, 1e-3), 14)
    for i, b, v in ((1, -0.989022, 0.120398), (4, -3.67543, 3.29118), (7, -0.353431, 25.5111)):
        assert acc[i - 1]["bias_mle"] == pytest.approx(b, abs=5e-6)
        assert acc[i - 1]["variance_mle"] == pytest.approx(v, abs=5e-5)


def sbh_oracle(i: int, eps: float, delta: float, q) -> tuple[mp.mpf, mp.mpf]:
    t = 1 + mp.log(1 / mp.mpf(delta)) / eps

    def lap(y):
        return eps / 2 * mp.exp(-eps * abs(y - i))

    pts = sorted({t, max(t, mp.mpf(i)), max(t, mp.mpf(i)) + 80 / mp.mpf(eps)})
    m1 = mp.quad(lambda y: y * lap(y), pts)
    m2 = mp.quad(lambda y: y * y / q(y) * lap(y), pts)
    return m1 - i, m2 - m1 * m1


@pytest.mark.parametrize(
    ("method", "tau", "eps", "delta"),
    [("none", 1.0, 1.0, 1e-3), ("ppswor", 0.05, 0.5, 1e-4), ("priority", 0.02, 0.25, 2**-20)],
)
def test_sbh_bias_variance_against_mpmath(method: str, tau: float, eps: float, delta) -> None:
    mp.mp.dps = 30
    if method == "none":
        q = lambda y: mp.mpf(1)  # noqa: E731
    elif method == "ppswor":
        q = lambda y: -mp.expm1(-tau * y)  # noqa: E731
    else:
        q = lambda y: min(mp.mpf(1), tau * y)  # noqa: E731
    freqs = np.array([1, 5, 17, 40, 120, 400, 2000])  # 400, 2000: the shared grid
    bias, var = E.sbh_bias_variance(
        freqs, eps, delta, method=method, threshold=tau, weight_power=1.0
    )
    for k, i in enumerate(freqs.tolist()):
        b, v = sbh_oracle(i, eps, delta, q)
        assert bias[k] == pytest.approx(float(b), rel=1e-10, abs=1e-12)
        assert var[k] == pytest.approx(float(v), rel=1e-10, abs=1e-12)


def test_sbh_bias_closed_form_below_threshold() -> None:
    # spec B9: E[a] = (δ/2)e^{(i−1)ε}(T + 1/ε) for i < T, whatever the sampling rate
    eps, delta = 1.0, 1e-3
    t = 1 + math.log(1 / delta) / eps
    for i in (1, 3, 6):
        want = delta / 2 * math.exp((i - 1) * eps) * (t + 1 / eps) - i
        for kw in ({"method": "none"}, {"method": "ppswor", "threshold": 0.01}):
            got = E.sbh_bias_variance(np.array([i]), eps, delta, **kw)[0][0]
            assert got == pytest.approx(want, rel=1e-12)


def brute_keys(support: int, alpha: float, eps: float, delta: float) -> tuple[float, float]:
    """Σ over every key of π (Alg. 3 by its recursion, q ≡ 1) and of SbH's φ
    (φ_i = Pr[i + Lap(1/ε) >= T]), one key at a time."""
    t = 1 + math.log(1 / delta) / eps
    pi = [0.0]
    while pi[-1] < 1.0 and len(pi) < 10**6:
        p = pi[-1]
        pi.append(min(1.0, math.exp(eps) * p + delta, 1 + math.exp(-eps) * (p + delta - 1)))
    pws_sum = sbh_sum = 0.0
    for k in range(support):
        w = math.floor(((k + 1.0) ** -alpha) / (float(support) ** -alpha))
        pws_sum += pi[w] if w < len(pi) else 1.0
        d = t - w
        sbh_sum += 0.5 * math.exp(-eps * d) if d >= 0 else 1 - 0.5 * math.exp(eps * d)
    return pws_sum, sbh_sum


@pytest.mark.parametrize(
    ("alpha", "ratios"),
    [
        # spec B10 (004 Fig. 2: "20–300 % more keys"), q ≡ 1, ε = 0.1, support 10^5,
        # δ = 1, 0.1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-8
        (1.0, (1.71, 3.14, 2.84, 1.97, 1.55, 1.29, 1.20)),
        (2.0, (1.45, 2.06, 1.69, 1.37, 1.23, 1.13, 1.09)),
    ],
)
def test_zipf_key_counts_reproduce_figure_2(alpha: float, ratios) -> None:
    dist = E.zipf(10**5, alpha)
    for delta, want in zip((1, 0.1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-8), ratios, strict=True):
        r = E.expected_keys(params(0.1, delta), dist)
        assert round(r["ratio"], 2) == want, (delta, r["ratio"])


def test_key_counts_against_brute_force() -> None:
    for alpha, delta in ((1.0, 1e-3), (2.0, 1e-2), (0.5, 1e-6)):
        r = E.expected_keys(params(0.1, delta), E.zipf(10**4, alpha))
        want_pws, want_sbh = brute_keys(10**4, alpha, 0.1, delta)
        assert r["pws_keys"] == pytest.approx(want_pws, rel=1e-11)
        assert r["sbh_keys"] == pytest.approx(want_sbh, rel=1e-11)


def test_figure_4_ppswor_gains() -> None:
    # 004 Fig. 4 caption: ppswor, ε = 0.1, δ = 1e-3: gains "at least 230 % (α = 0.5),
    # 97 % (α = 1) and 37 % (α = 2)"; spec B10: 3.32 / 1.97 / 1.37 at τ = 1 and 0.1,
    # support 10^5
    for alpha, want in ((0.5, 3.32), (1.0, 1.97), (2.0, 1.37)):
        dist = E.zipf(10**5, alpha)
        for tau in (1.0, 0.1):
            r = E.expected_keys(params(0.1, 1e-3, "ppswor", tau), dist)
            assert round(r["ratio"], 2) == want


def test_frequency_file_and_cli(tmp_path) -> None:
    f = tmp_path / "freq.csv"
    f.write_text("frequency,count\n1,500\n10,20\n40,3\n")
    d = E.read_distribution(str(f))
    assert d.frequency.tolist() == [1, 10, 40] and d.count.tolist() == [500, 20, 3]
    design = tmp_path / "d.yaml"
    design.write_text(
        "name: h\ntarget: {epsilon_prime: 1.0, delta_prime: 0.001}\n"
        "sampling: {scheme: pws, method: none}\n"
    )
    out = run_ampcalc("pws", "keys", str(design), "--frequencies", str(f), "--json").json()
    t = pws.compute_table(params(1.0, 1e-3))
    want = 500 * t.pi[0] + 20 * t.pi[9] + 3 * 1.0
    assert out["pws_keys"] == pytest.approx(want, rel=1e-14)
    phi = K.sbh_phi(40, 1.0, 1e-3)
    assert out["sbh_keys"] == pytest.approx(500 * phi[0] + 20 * phi[9] + 3 * phi[39], rel=1e-14)
    bad = tmp_path / "bad.csv"
    bad.write_text("frequency\n0\n")
    with pytest.raises(DesignError, match=r"bad\.csv:2"):
        E.read_distribution(str(bad))
    run_ampcalc("pws", "keys", str(design), expect=2)  # neither --frequencies nor --zipf


def test_estimate_cli_unbiased_and_sbh_columns(tmp_path) -> None:
    design = tmp_path / "d.yaml"
    design.write_text(
        "name: h\ntarget: {epsilon_prime: 1.0, delta_prime: 0.001}\n"
        "sampling: {scheme: pws, method: none}\n"
    )
    priv = tmp_path / "p.csv"
    priv.write_text("key,frequency\na,1\nb,2\n")
    out = run_ampcalc(
        "pws", "estimate", str(priv), "-d", str(design), "--estimator", "unbiased", "--json"
    ).json()
    assert out["estimator"] == "unbiased"
    assert out["estimate"] == pytest.approx(1000.0 - 718.2818284590, rel=1e-9)
    row1 = out["frequencies"][0]
    assert row1["bias"] == pytest.approx(0.0, abs=1e-9)
    assert row1["bias_sbh"] == pytest.approx(-0.9955461223605, rel=1e-10)
    mle = run_ampcalc("pws", "estimate", str(priv), "-d", str(design), "--json").json()
    assert mle["estimator"] == "mle"
    assert mle["estimate"] == pytest.approx(10.978102211205 + 9.226576443444, rel=1e-9)


def test_key_counts_ignore_a_short_max_frequency() -> None:
    # a design's max_frequency below the settling point must not make π = q early
    dist = E.zipf(10**4, 1.0)
    p = params(0.1, 1e-3)
    short = pws.Params(method="none", epsilon=0.1, delta=1e-3, max_frequency=5)
    assert E.expected_keys(short, dist)["pws_keys"] == E.expected_keys(p, dist)["pws_keys"]
