"""Per-record kernels: pure numpy-in, numpy-out functions with no global state.

Thin, validated wrappers over the kernels the commands use, for pipelines that hold
their records in memory (a DataFrame's ``.to_numpy()``, a Dask partition):

- ``privacy_constrained_probabilities(profile, X, target)``: q*(x) of
  “Personalized Privacy Amplification via Importance Sampling”, Theorem 10 / Algorithm 1;
- ``personalised_epsilon(profile, X, probabilities)``: ε̂(x) of the same paper, Theorem 6;
- ``reporting_probabilities(q, epsilon, delta)``: π_i of Cohen et al. 2021
  Algorithm 3 (private weighted sampling);
- ``sanitize_keys(keys, freqs, rng, ...)``: Cohen et al. 2021, Algorithm 2 (and Algorithm 4's
  sanitized frequencies).

A *profile* is the ``mechanism:`` block of an importance design as a dict:
``{"profile": "laplace-sum", "scale": β}`` (ε(w, x) = w‖x‖₁/β),
``{"profile": "dp-lloyd", "iterations": T, "count_scale": β_c, "sum_scale": β_s,
"norm": "l2"}`` (ε(w, x) = Tw(1/β_c + ‖x‖/β_s), Prop. 13; or ``noise_constant: B``
with ``radius`` and the records' dimension), or ``{"profile": "constant",
"epsilon": ε0}`` (ignores weights, Prop. 3). ``X`` is an ``(n, d)`` array of records
(a 1-D array is n records of dimension 1). Results are rounded outward exactly as the
``weights`` command's: the same numbers for the same records.

Invalid arguments raise ``ampcalc.AmpcalcError`` naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ampcalc.math import numeric
from ampcalc.math import pws as pws_kernels
from ampcalc.math.importance import PROFILE_PARAMETERS as KEYS
from ampcalc.math.importance import personalised_epsilon as kernel
from ampcalc.math.importance import privacy_constrained_weights, profile_coefficients
from ampcalc.model.errors import AmpcalcError
from ampcalc.model.references import PWS, SU16


def _positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise AmpcalcError(f"{name}: expected a number > 0, got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise AmpcalcError(f"{name}: expected a finite number > 0, got {value!r}")
    return v


def _records(X: Any) -> np.ndarray:
    x = np.asarray(X, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise AmpcalcError(f"X: expected an (n, d) array of records, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise AmpcalcError("X: records must be finite numbers")
    return x


def _coefficients(profile: Mapping[str, Any], dimension: int, radius: float | None) -> Any:
    """(LinearCoefficients, norm, linear) of a profile dict: its arguments checked here
    (errors name the argument), its meaning the design loader's
    (``math.importance.profile_coefficients``)."""

    if not isinstance(profile, Mapping) or "profile" not in profile:
        raise AmpcalcError(
            "profile: expected a dict with 'profile' (laplace-sum, dp-lloyd or constant) and "
            "its parameters, e.g. {'profile': 'laplace-sum', 'scale': 4.0}"
        )
    kind = profile["profile"]
    if kind not in KEYS:
        raise AmpcalcError(f"profile.profile: expected one of {', '.join(KEYS)}, got {kind!r}")
    unknown = sorted(set(profile) - {"profile", *KEYS[kind]})
    if unknown:
        raise AmpcalcError(
            f"profile: unknown key(s) {', '.join(map(repr, unknown))} for {kind}; expected "
            + ", ".join(KEYS[kind])
        )
    values: dict[str, Any] = {}
    if kind == "laplace-sum":
        values["scale"] = _positive(profile.get("scale"), "profile.scale")
    elif kind == "constant":
        values["epsilon"] = _positive(profile.get("epsilon"), "profile.epsilon")
    else:
        values = _lloyd_values(profile, radius)
    coef, norm, _ = profile_coefficients(kind, values, dimension, radius)
    return coef, norm, kind != "constant"


def _lloyd_values(profile: Mapping[str, Any], radius: float | None) -> dict[str, Any]:
    """A dp-lloyd profile's checked parameters (``noise_constant`` B, or both scales)."""
    t = profile.get("iterations")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1:
        raise AmpcalcError(f"profile.iterations: expected a whole number >= 1, got {t!r}")
    norm = profile.get("norm", "l2")
    if norm not in ("l1", "l2"):
        raise AmpcalcError(f"profile.norm: expected l1 or l2, got {norm!r}")
    values: dict[str, Any] = {"iterations": int(t), "norm": norm}
    if profile.get("noise_constant") is not None:
        if "count_scale" in profile or "sum_scale" in profile:
            raise AmpcalcError(
                "profile: give either noise_constant or count_scale and sum_scale, not both"
            )
        if radius is None:
            raise AmpcalcError(
                f"profile.noise_constant: the {SU16} scales need the public radius r: pass radius="
            )
        values["noise_constant"] = _positive(profile["noise_constant"], "profile.noise_constant")
    else:
        values["count_scale"] = _positive(profile.get("count_scale"), "profile.count_scale")
        values["sum_scale"] = _positive(profile.get("sum_scale"), "profile.sum_scale")
    return values


def _unsampled_epsilon(
    profile: Mapping[str, Any], X: Any, radius: float | None
) -> tuple[np.ndarray, bool]:
    """ε(1, x) per record, rounded up (as ``schemes.importance.record_figures``)."""

    x = _records(X)
    coef, norm, linear = _coefficients(profile, x.shape[1], radius)
    raw = np.sum(np.abs(x), axis=1) if norm == "l1" else np.sqrt(np.sum(x * x, axis=1))
    z = numeric.round_up(raw, 16)
    a = coef.at(z)
    a = numeric.round_up(a, 1) if linear else np.full(z.shape, coef.alpha)
    return a, linear


def privacy_constrained_probabilities(
    profile: Mapping[str, Any], X: Any, target: float, *, radius: float | None = None
) -> np.ndarray:
    """q*(x) = 1/w*(x): the smallest inclusion probability with ε̂(x) <= ε* per record.

    Basis: “Personalized Privacy Amplification via Importance Sampling” Theorem 10 and Algorithm 1.
    Neighbours: add-remove (personalised DP, the importance-sampling paper, Def. 4).
    Conditions: a weight-linear profile (laplace-sum, dp-lloyd); a record with
        ε(1, x) > ε* has no feasible weight and gets ``nan`` (the ``weights`` command
        writes it with q = 1 and flags it); ε(1, x) = 0 gives q* = 0.
    Formula: w* solves e^{a w} − 1 = w(e^{ε*} − 1) with a = ε(1, x) (Lambert W, A7).
    Numerics: w* is the feasible end (certified ε̂ <= ε* as evaluated), never a
        bisection midpoint; q* is therefore never below what the target allows.

    Args:
        profile: the privacy profile (see the module docstring).
        X: records, shape (n, d).
        target: ε* > 0 (at most 700), the loss every record must meet.
        radius: the public domain bound r (only for a dp-lloyd ``noise_constant``).
    Returns:
        q*, shape (n,), in [0, 1] (``nan`` where infeasible).
    """

    eps_star = _positive(target, "target")
    if eps_star > 700:
        raise AmpcalcError(f"target: ε* above 700 is outside the supported range, got {target!r}")
    a, linear = _unsampled_epsilon(profile, X, radius)
    if not linear:
        raise AmpcalcError(
            "profile: privacy-constrained probabilities need a weight-linear profile "
            "(laplace-sum or dp-lloyd); a constant profile does not depend on the weight"
        )
    w = privacy_constrained_weights(a, eps_star)
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(w), 0.0, 1.0 / w)


def personalised_epsilon(
    profile: Mapping[str, Any], X: Any, probabilities: Any, *, radius: float | None = None
) -> np.ndarray:
    """ε̂(x) = log(1 + q(x)(e^{ε(1/q(x), x)} − 1)) per record, rounded up.

    Basis: “Personalized Privacy Amplification via Importance Sampling” Theorem 6.
    Neighbours: add-remove.
    Conditions: q in [0, 1]; q = 0 gives ε̂ = 0 (the record is never sampled).
    Formula: weight-linear profiles: ε̂ = A(q, ε(1, x)/q); constant: A(q, ε0).
    Tightness: attained by randomised response on the presence of that record.
    Numerics: ε(1, x)/q rounded up, then amplification rounded up (overflow-free).

    Args:
        profile: the privacy profile (see the module docstring).
        X: records, shape (n, d).
        probabilities: q(x), shape (n,) or a scalar.
        radius: the public domain bound r (only for a dp-lloyd ``noise_constant``).
    Returns:
        ε̂, shape (n,), never below the exact value.
    """

    a, linear = _unsampled_epsilon(profile, X, radius)
    q = np.asarray(probabilities, dtype=float)
    if q.ndim > 1 or (q.ndim == 1 and q.size != a.size):
        raise AmpcalcError(
            f"probabilities: expected one per record ({a.size}) or a scalar, got shape {q.shape}"
        )
    if np.any(~np.isfinite(q)) or np.any(q < 0) or np.any(q > 1):
        raise AmpcalcError("probabilities: expected numbers in [0, 1]")
    return kernel(np.broadcast_to(q, a.shape), a, linear=linear)


def _privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    eps = _positive(epsilon, "epsilon")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise AmpcalcError(f"delta: expected a number in (0, 1], got {delta!r}") from None
    if not 0 < d <= 1:
        raise AmpcalcError(f"delta: expected a number in (0, 1], got {delta!r}")
    return eps, d


def _inclusion(q: Any) -> np.ndarray:
    arr = np.asarray(q, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise AmpcalcError(
            f"q: expected a non-empty 1-D array q_1..q_n (index 0 is frequency 1), got shape "
            f"{arr.shape}"
        )
    if np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise AmpcalcError("q: expected inclusion probabilities in [0, 1]")
    if np.any(np.diff(arr) < 0):
        raise AmpcalcError(f"q: expected q non-decreasing in the frequency ({PWS}, Alg. 1)")
    return arr


def reporting_probabilities(q: Any, epsilon: float, delta: float) -> np.ndarray:
    """π_i = min{q_i, e^ε π_{i−1} + δ, 1 + e^{−ε}(π_{i−1} + δ − 1)}, i = 1..n.

    Basis: Cohen et al. 2021 Algorithm 3 and Lemma 4.1 (pointwise maximal
        reporting probabilities p_i = π_i/q_i of a key with frequency i).
    Neighbours: add-remove of one element (a key's frequency changes by one).
    Conditions: ε > 0, 0 < δ <= 1, q_1..q_n in [0, 1] non-decreasing (q ≡ 1 when
        the data are not sampled; threshold sampling: Cohen et al. 2021, Alg. 1, Eq. 1).
    Numerics: both privacy terms rounded down, so the float π satisfies the DP
        constraints exactly.

    Returns:
        π, shape (n,), with 0 <= π_i <= q_i.
    """

    eps, d = _privacy(epsilon, delta)
    return pws_kernels.reporting_probabilities(_inclusion(q), eps, d)


def _seed(rng: Any) -> int:
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63, dtype=np.int64))
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)) or rng < 0:
        raise AmpcalcError(
            f"rng: expected a seed (a whole number >= 0) or a numpy.random.Generator, got {rng!r}"
        )
    return int(rng)


def sanitize_keys(
    keys: Sequence[Any],
    freqs: Any,
    rng: Any,
    *,
    epsilon: float,
    delta: float,
    q: Any = None,
    frequencies: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Algorithm 2 of Cohen et al. 2021: report key x with probability p_{w_x} = π_{w_x}/q_{w_x}.

    Basis: Cohen et al. 2021 Algorithm 2 (keys), Algorithm 4 (sanitized
        frequencies), with π from Algorithm 3.
    Neighbours: add-remove of one element.
    Conditions: each key once; frequencies whole numbers >= 1 and at most len(q).

    ``rng`` is a seed (a whole number >= 0) or a ``numpy.random.Generator``. A key's
    uniform is a pure function of (seed, key): a counter-based generator keyed by the
    seed with the key's 64-bit hash as counter, so a key's outcome does not depend on
    the other keys, their order or how the data are partitioned, and an int seed gives
    the CLI's ``pws sanitize --seed`` output. A Generator is used once, to draw that
    seed (so the call advances it by one draw).

    Args:
        keys: the sample's keys (converted to ``str``).
        freqs: each key's frequency w_x (>= 1).
        rng: a seed or a Generator (see above).
        epsilon, delta: the sanitizer's (ε, δ).
        q: inclusion probabilities q_1..q_n of the sample (default: q ≡ 1 up to the
            largest frequency, i.e. no sampling).
        frequencies: also draw each reported key's sanitized frequency (Algorithm 4).
    Returns:
        (reported mask, sanitized frequencies or ``None``); a token is 0 where the key
        is not reported.
    """

    eps, d = _privacy(epsilon, delta)
    key_list = [str(k) for k in keys]
    f = np.asarray(freqs)
    if f.shape != (len(key_list),):
        raise AmpcalcError(
            f"freqs: expected one frequency per key ({len(key_list)}), got shape {f.shape}"
        )
    if f.size and (f.dtype.kind not in "iuf" or np.any(f != np.round(f)) or f.min() < 1):
        raise AmpcalcError("freqs: expected whole numbers >= 1")
    f = f.astype(np.int64)
    if len(set(key_list)) != len(key_list):
        raise AmpcalcError("keys: each key must appear once (with its frequency)")
    top = int(f.max()) if f.size else 1
    qa = np.ones(top) if q is None else _inclusion(q)
    if qa.size < top:
        raise AmpcalcError(f"q: covers frequencies up to {qa.size}; the keys reach {top}")
    pi = pws_kernels.reporting_probabilities(qa, eps, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(qa > 0, pi / qa, 0.0)
    rows = pws_kernels.frequency_rows(qa, eps, d, pi) if frequencies else None
    return pws_kernels.sanitize_keys(key_list, f, _seed(rng), p=p, rows=rows)


__all__ = [
    "personalised_epsilon",
    "privacy_constrained_probabilities",
    "reporting_probabilities",
    "sanitize_keys",
]
