#!/bin/sh
# Regenerate the figures of the documentation from their design files:
#   sh examples/figures/render.sh
# Needs the plot extra (pip install 'ampcalc[plot]'). Each figure also leaves its
# data as CSV next to the PNG (one row per point, the columns of `ampcalc sweep`).
# tests/test_figures.py runs every `ampcalc sweep` line below and checks its data
# against the engine, and the PNG's pixel size; tests/test_figures_committed.py checks
# that the committed CSVs equal a fresh run (run this script after a change to the
# engine). docs/sweep.md (and README.md) show each line exactly as written here.
set -eu
cd "$(dirname "$0")"

# Hu et al., Figure 3: the ε the sample may spend for a
# population target ε′ ∈ {0.1, 0.5, 1}, against the sampling rate n/N.
ampcalc sweep 002-figure3.yaml --of invert --vary sampling.sample=100:10000:100 --vary target=0.1,0.5,1 --x-factor 1e-4 --xlabel "sampling rate n/N (N = 10,000)" --title "Hu et al., Figure 3: the ε a simple random sample may spend" --plot 002-figure3.png --format csv > 002-figure3.csv

# Hu et al., Figure 4: the q bound (variance_share_max: the largest sampling-variance share of V_N that
# still allows an accuracy gain) against the sampling rate, for several targets ε.
ampcalc sweep 002-figure4.yaml --of plan --vary sampling.sample=10:10000:200 --vary target=0.01,0.1,0.5,1,3 --x-factor 1e-4 --xlabel "sampling rate n/N (N = 10,000)" --title "Hu et al., Figure 4: largest variance share (q) against the sampling rate" --plot 002-figure4.png --format csv > 002-figure4.csv

# Bun et al., Figure 2: Theorem 3.1 bounds for a truncated
# normal sample size (N = 10⁴, ε = 0.01) against its standard deviation σ, for M
# 0.01-DP under both relations (the paper's curve) and under add-remove only.
ampcalc sweep 000-figure2.yaml --vary sampling.size.sd=1:1000:60:log --title "Bun et al., Figure 2: random sample size, N = 10⁴, ε = 0.01" --plot 000-figure2.png --format csv > 000-figure2.csv

# The cluster lesson of Bun et al., §5: ℓ/k fixed at 10 %, clusters growing; beside it
# a Poisson sample of records at the same 10 %.
ampcalc sweep 000-cluster-lesson.yaml --vary "designs[0].sampling.clusters.size=1:300:40:log" --title "Bun et al., §5: cluster samples stop amplifying as clusters grow" --plot 000-cluster-lesson.png --format csv > 000-cluster-lesson.csv

# Cohen et al. 2021, Figure 1: reporting probability by frequency,
# PWS (opt) π_i against SbH φ_i, no sampling; a table of each result, not a sweep.
python 004-figure1.py 004-figure1.png

# ε′ against M's ε for Poisson and simple random sampling at the same 1% fraction,
# with the no-sampling line (log axes).
ampcalc sweep srs-vs-poisson.yaml --vary mechanism.epsilon=0.01:10:120:log --log-y --title "1% samples: amplified ε′ against the mechanism's ε" --plot srs-vs-poisson.png --format csv > srs-vs-poisson.csv

# The upper bound on ε′ over a grid of sampling rates and mechanism ε (heatmap, log
# colour scale): where a simple random sample of N = 10,000 amplifies, and how much.
ampcalc sweep 002-figure3.yaml --vary sampling.sample=10:10000:40:log --vary mechanism.epsilon=0.01:10:40:log --heatmap --x-factor 1e-4 --xlabel "sampling rate m/N (N = 10,000)" --title "Simple random sample: upper bound on ε′" --plot srs-heatmap.png --format csv > srs-heatmap.csv

# The SRS-vs-stratified comparison in one picture: one register, one sampling fraction,
# four designs, ε′ (replace-one) against M's ε.
ampcalc sweep srs-vs-stratified.yaml --vary mechanism.epsilon=0.01:5:80:log --log-y --title "SRS against stratified designs, 0.145 % of 6.9 M establishments" --plot srs-vs-stratified.png --format csv > srs-vs-stratified.csv

# Unstratified, stratified and cluster samples of the same register at the same
# fraction, add-remove guarantees: the comparison in one picture.
ampcalc sweep unstratified-vs-stratified-vs-cluster.yaml --vary mechanism.epsilon=0.01:5:80:log --log-y --title "Unstratified, stratified and cluster samples of 0.145 %" --plot unstratified-vs-stratified-vs-cluster.png --format csv > unstratified-vs-stratified-vs-cluster.csv
