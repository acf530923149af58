"""Private weighted sampling kernels (pure numpy): Cohen et al. 2021.

The kernels live in four modules; this one gathers their public names:

- ``pws_reporting``: threshold sampling q_i (``inclusion_probabilities``, Alg. 1,
  Eq. 1), L(ε, δ) (``L_eps_delta``, Eq. 3) and Algorithm 3's optimal key-reporting
  probabilities π_i (``reporting_probabilities``), exact recursion in O(N).
- ``pws_rows``: Algorithm 4's sanitized frequencies j ≤ i as banded rows
  (``frequency_rows``, ``Rows``), the exact DP self-check between consecutive rows
  (``hockey_stick``, ``dp_check``, ``dp_check_pi``), and the MLE estimator a_j with
  per-frequency bias, variance and MSE (``mle_estimates``, ``bias_variance``; spec B8,
  Eq. 9).
- ``pws_sbh``: the stability-based histogram's reporting probability (``sbh_phi``,
  spec B9), sampled when q < 1.
- ``pws_keys``: the sanitizer (Alg. 2) with a counter-based per-key generator
  (``key_hashes``, ``key_uniforms``, ``sanitize_keys``), so chunked, streamed and
  distributed runs agree.
"""

from __future__ import annotations

from ampcalc.math.pws_keys import (
    byte_key_hashes,
    encode_keys,
    hash_uniforms,
    key_hash_reference,
    key_hashes,
    key_uniforms,
    sanitize_hashes,
    sanitize_keys,
)
from ampcalc.math.pws_reporting import (
    METHODS,
    L_eps_delta,
    inclusion_probabilities,
    reporting_probabilities,
    settled_index,
)
from ampcalc.math.pws_rows import (
    Rows,
    RowsTooLong,
    bias_variance,
    constant_from,
    dp_check,
    dp_check_pi,
    dp_check_pi_exact,
    dp_tolerance,
    frequency_rows,
    hockey_stick,
    mle_estimates,
)
from ampcalc.math.pws_sbh import hypoexponential_cdf, sbh_phi, sbh_threshold

__all__ = [
    "METHODS",
    "L_eps_delta",
    "Rows",
    "RowsTooLong",
    "bias_variance",
    "byte_key_hashes",
    "constant_from",
    "dp_check",
    "dp_check_pi",
    "dp_check_pi_exact",
    "dp_tolerance",
    "encode_keys",
    "frequency_rows",
    "hash_uniforms",
    "hockey_stick",
    "hypoexponential_cdf",
    "inclusion_probabilities",
    "key_hash_reference",
    "key_hashes",
    "key_uniforms",
    "mle_estimates",
    "reporting_probabilities",
    "sanitize_hashes",
    "sanitize_keys",
    "sbh_phi",
    "sbh_threshold",
    "settled_index",
]
