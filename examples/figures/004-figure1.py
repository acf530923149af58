"""Cohen et al. 2021 (Differentially Private Weighted Sampling), Figure 1: reporting
probability by frequency.

With no sampling (q = 1): the optimal private weighted sampling probabilities π_i
(Algorithm 3) against the stability-based histogram baseline φ_i, for
(ε, δ) = (0.1, 0.01) and (0.01, 10⁻⁶). The numbers are the ``details.frequencies``
table of ``ampcalc bound 004-figure1.yaml --json``.

Run:  python examples/figures/004-figure1.py [OUT.png]   (needs ampcalc[plot])
Also writes the data as 004-figure1.csv next to the figure.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DESIGN = HERE / "004-figure1.yaml"


def tables() -> list[tuple[str, list[dict], list[str]]]:
    """(design name, its frequency rows, its basis) per design of the file."""
    import ampcalc
    from ampcalc import engine

    out = []
    for design in ampcalc.load_designs(DESIGN):
        result = engine.bound(design)
        out.append((design.name, list(result.details["frequencies"]), list(result.basis)))
    return out


def main(argv: list[str]) -> int:
    from ampcalc.output import plot

    out = Path(argv[0]) if argv else HERE / "004-figure1.png"
    data = tables()
    curves = []
    rows = []
    for k, (name, freq, _) in enumerate(data):
        x = [r["frequency"] for r in freq]
        curves.append({"x": x, "y": [r["pi"] for r in freq], "label": f"PWS (opt) π, {name}",
                       "colour": f"C{k}"})  # fmt: skip
        curves.append({"x": x, "y": [r["phi_sbh"] for r in freq], "label": f"SbH φ, {name}",
                       "colour": f"C{k}", "dashed": True})  # fmt: skip
        rows.extend(
            {"design": name, "frequency": r["frequency"], "pi": r["pi"], "phi_sbh": r["phi_sbh"]}
            for r in freq
        )
    basis = list(dict.fromkeys(b for _, _, bs in data for b in bs))
    plot.table_figure(
        curves,
        out,
        xlabel="frequency i of a key",
        ylabel="probability the key is reported",
        title="Cohen et al. 2021, Figure 1: no sampling (q = 1), PWS (opt) π vs SbH φ",
        caption_text="Basis: " + "; ".join(str(b) for b in basis),
        log_x=True,
    )
    with out.with_suffix(".csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["design", "frequency", "pi", "phi_sbh"])
        writer.writeheader()
        writer.writerows(rows)
    sys.stderr.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
