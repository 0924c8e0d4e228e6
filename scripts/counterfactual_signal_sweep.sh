#!/usr/bin/env bash
# Every epoch of config/experiments/counterfactual-signal.yaml's exposure grid
# through the counterfactual stage, not only the one its loss rule chose
# (README, "A real functional-memorisation signal"): per epoch, a one-line
# overlay on top of the experiment sets counterfactual.epoch, the stage runs,
# its tables are kept under results/counterfactual-signal/sweep/epoch-N/ and
# their figures printed.
#
#   scripts/counterfactual_signal_sweep.sh [EPOCH ...]    (default: 5 10 20 40)
#
# SNAKEMAKE (default: snakemake) and PYTHON (default: python) name the tools;
# CORES (default 1) is passed to snakemake.
set -euo pipefail
cd "$(dirname "$0")/.."
SNAKEMAKE=${SNAKEMAKE:-snakemake}
PYTHON=${PYTHON:-python}
RUN=results/counterfactual-signal
STAGE=$RUN/counterfactual/humaneval
overlay=$(mktemp --suffix .yaml)
trap 'rm -f "$overlay"' EXIT
epochs=("$@")
[ ${#epochs[@]} -gt 0 ] || epochs=(5 10 20 40)
for e in "${epochs[@]}"; do
  printf 'counterfactual: {epoch: %d}\n' "$e" > "$overlay"
  "$SNAKEMAKE" --cores "${CORES:-1}" --configfile config/experiments/counterfactual-signal.yaml "$overlay" -- "$STAGE/similarity.parquet"
  mkdir -p "$RUN/sweep/epoch-$e"
  cp "$STAGE/generations.parquet" "$STAGE/similarity.parquet" "$RUN/sweep/epoch-$e/"
  echo "## epoch $e"
  "$PYTHON" scripts/counterfactual_signal.py "$RUN" --similarity-dir "$RUN/sweep/epoch-$e"
done
