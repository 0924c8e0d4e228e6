#!/usr/bin/env bash
# The SLURM profile, proven: the same config run locally and through
# config/profiles/slurm, both with `--cores` = this machine's CPUs (on one
# node, what the SLURM jobs may hold at once), each in its own fresh
# copy of the repository (so no result can depend on the directory it was
# made in), timed; every Parquet result compared byte for byte
# (scripts/compare_results.py); the SLURM run must take at most 1.5x the
# local run. Prints a table and writes it to $WORK/summary.tsv.
#
#   scripts/slurm-proof.sh                        on the cluster `sinfo` answers now
#   scripts/slurm-proof.sh --local-cluster MODE   on scripts/slurm-local-cluster.sh's cluster,
#                                                 brought up and down here; MODE: none (no
#                                                 accounting), accounting (slurmdbd), or both
# Environment: CONFIG (default config/micro.yaml), SNAKEMAKE (default
# .venv/bin/snakemake), WORK (default a new temporary directory), MAX_RATIO (1.5).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIG=${CONFIG:-config/micro.yaml}
SNAKEMAKE=${SNAKEMAKE:-$ROOT/.venv/bin/snakemake}
PYTHON=$(dirname "$SNAKEMAKE")/python
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/leaktrace-proof.XXXXXX")}
mkdir -p "$WORK"
MAX_RATIO=${MAX_RATIO:-1.5}
CLUSTER_SCRIPT=$ROOT/scripts/slurm-local-cluster.sh
RUN=$("$PYTHON" -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1])).get('run', 'default'))" "$ROOT/$CONFIG")

log() { echo "slurm-proof: $*" >&2; }

fresh_copy() {  # the tracked and untracked-but-not-ignored files, nothing made by a run
    rm -rf "$1" && mkdir -p "$1"
    (cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$1"
}

timed() {  # timed LOGFILE COMMAND...: seconds on stdout
    local start end
    start=$(date +%s.%N)
    "${@:2}" >"$1" 2>&1 || { log "failed, see $1"; tail -n 30 "$1" >&2; exit 1; }
    end=$(date +%s.%N)
    awk "BEGIN {print $end - $start}"
}

local_run() {
    fresh_copy "$WORK/local"
    log "local run ($CONFIG, --cores $(nproc)) in $WORK/local"
    LOCAL_S=$(cd "$WORK/local" && PYTHONPATH=$WORK/local/workflow timed "$WORK/local.log" \
        "$SNAKEMAKE" --cores "$(nproc)" --configfile "$CONFIG")
    log "local: ${LOCAL_S}s"
}

slurm_run() {  # slurm_run LABEL
    local dir=$WORK/slurm-$1 seconds ratio verdict=ok
    fresh_copy "$dir"
    log "SLURM run ($1) in $dir"
    seconds=$(cd "$dir" && PYTHONPATH=$dir/workflow timed "$WORK/slurm-$1.log" \
        "$SNAKEMAKE" --workflow-profile config/profiles/slurm --configfile "$CONFIG" --cores "$(nproc)")
    ratio=$(awk "BEGIN {printf \"%.2f\", $seconds / $LOCAL_S}")
    "$PYTHON" "$ROOT/scripts/compare_results.py" "$WORK/local/results/$RUN" "$dir/results/$RUN" >"$WORK/compare-$1.txt" || verdict=differs
    awk "BEGIN {exit !($ratio > $MAX_RATIO)}" && verdict="$verdict, too slow"
    printf "%s\t%.0f\t%.0f\t%s\t%s\t%s\n" "$1" "$LOCAL_S" "$seconds" "$ratio" "$(tail -n 1 "$WORK/compare-$1.txt")" "$verdict" \
        >>"$WORK/summary.tsv"
    [[ $verdict == ok ]] || FAILED=1
}

FAILED=0
MODE=
if [[ ${1:-} == --local-cluster ]]; then
    MODE=${2:?--local-cluster needs none, accounting or both}
fi
printf "cluster\tlocal_s\tslurm_s\tratio\tparquet\tverdict\n" >"$WORK/summary.tsv"
if [[ -z $MODE ]]; then
    sinfo -h >/dev/null 2>&1 || { log "no SLURM cluster answers (sinfo)"; exit 1; }
    local_run
    # AccountingStorageType reads accounting_storage/none or .../slurmdbd: the label names a directory
    slurm_run "$(scontrol show config | awk '/^AccountingStorageType/ {sub(/^accounting_storage\//, "", $3); print $3}')"
else
    [[ $MODE == both ]] && modes=(none accounting) || modes=("$MODE")
    "$CLUSTER_SCRIPT" down
    local_run
    for mode in "${modes[@]}"; do
        "$CLUSTER_SCRIPT" up $([[ $mode == accounting ]] && echo --accounting)
        eval "$("$CLUSTER_SCRIPT" env)"
        slurm_run "$mode"
        "$CLUSTER_SCRIPT" down
    done
fi
column -t -s $'\t' "$WORK/summary.tsv"
exit $FAILED
