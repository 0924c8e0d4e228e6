#!/usr/bin/env bash
# The SLURM profile, proven: the same config run locally (`--cores` = this
# machine's CPUs) and through config/profiles/slurm as the README writes it
# (no --cores: the cluster's nodes bound the jobs), each in its own fresh
# copy of the repository (so no result can depend on the directory it was
# made in), timed; every Parquet file and LoRA adapter compared byte for byte
# (scripts/compare_results.py); as one SLURM job per group the SLURM run must
# take at most 1.5x the local run. A job per job starts a fresh interpreter
# per job where the local run forks its jobs from one (leaktrace/forkserver.py),
# so there the ratio is reported, not bounded. Prints a table and writes it to
# $WORK/summary.tsv.
#
#   scripts/slurm-proof.sh                        on the cluster `sinfo` answers now
#   scripts/slurm-proof.sh --local-cluster MODE   on scripts/slurm-local-cluster.sh's cluster,
#                                                 brought up and down here; MODE: none (no
#                                                 accounting), accounting (slurmdbd), or both
#   scripts/slurm-proof.sh --per-job              both runs with cluster.one_job: false (a SLURM
#                                                 job per job)
#   scripts/slurm-proof.sh --kill-resume          a SLURM job per job, checkpoints every optimizer
#                                                 step and micro-batches of 2 (both runs); the first
#                                                 LoRA job is scancelled once its first checkpoint
#                                                 exists, and must resume from it on its retry
# The options combine. Environment: CONFIG (default config/micro.yaml),
# SNAKEMAKE (default .venv/bin/snakemake), WORK (default a new temporary
# directory), MAX_RATIO (1.5).

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
    log "local run ($CONFIG ${OVERLAY[*]}, --cores $(nproc)) in $WORK/local"
    LOCAL_S=$(cd "$WORK/local" && PYTHONPATH=$WORK/local/workflow timed "$WORK/local.log" \
        "$SNAKEMAKE" --cores "$(nproc)" --configfile "$CONFIG" "${OVERLAY[@]}")
    log "local: ${LOCAL_S}s"
}

# The first LoRA job of the SLURM run in DIR, scancelled once its first
# checkpoint exists (results/<run>/checkpoints/train_lora/<benchmark>/ratio-<r>-seed-<s>/state);
# writes "<slurm job> <benchmark> <ratio> <seed> <checkpoint step>" to $WORK/killed.txt.
kill_after_first_checkpoint() {
    local dir=$1 state="" run benchmark ratio seed job
    while [[ -z $state ]]; do
        state=$(compgen -G "$dir/results/$RUN/checkpoints/train_lora/*/*/state" | head -n 1 || true)
        [[ -z $state ]] && sleep 0.1
    done
    run=$(basename "$(dirname "$state")")
    benchmark=$(basename "$(dirname "$(dirname "$state")")")
    ratio=${run#ratio-} && ratio=${ratio%-seed-*} && seed=${run##*-seed-}
    # the slurm plugin's comment names the rule and its wildcards
    job=$(squeue -h -o "%i %k" | awk -v c="rule_train_lora_wildcards_${benchmark}_${ratio}_${seed}" '$2 == c {print $1}')
    scancel "$job"
    echo "$job $benchmark $ratio $seed" >"$WORK/killed.txt"
    log "scancelled SLURM job $job (train_lora $benchmark ratio $ratio seed $seed) after its first checkpoint"
}

slurm_run() {  # slurm_run LABEL
    local dir=$WORK/slurm-$1 seconds ratio verdict=ok killer killed resumed label=""
    fresh_copy "$dir"
    log "SLURM run ($1) in $dir"
    if ((KILL_RESUME)); then
        rm -f "$WORK/killed.txt"
        kill_after_first_checkpoint "$dir" &
        killer=$!
    fi
    seconds=$(cd "$dir" && PYTHONPATH=$dir/workflow timed "$WORK/slurm-$1.log" \
        "$SNAKEMAKE" --workflow-profile config/profiles/slurm --configfile "$CONFIG" "${OVERLAY[@]}")
    ratio=$(awk "BEGIN {printf \"%.2f\", $seconds / $LOCAL_S}")
    "$PYTHON" "$ROOT/scripts/compare_results.py" "$WORK/local/results/$RUN" "$dir/results/$RUN" >"$WORK/compare-$1.txt" || verdict=differs
    if ((KILL_RESUME)); then
        kill "$killer" 2>/dev/null || true
        if [[ -f $WORK/killed.txt ]]; then
            read -r killed benchmark r s <"$WORK/killed.txt"
            resumed=$(grep -ho "resuming at epoch [0-9]*, step [0-9]*" \
                "$dir/results/$RUN/logs/train_lora/$benchmark/ratio-$r-seed-$s.log" || true)
            [[ -n $resumed ]] || verdict="$verdict, job $killed did not resume"
            label="$1, train_lora ratio $r seed $s scancelled after its first checkpoint (${resumed:-no resume})"
        else
            verdict="$verdict, no LoRA job was killed"
        fi
    fi
    [[ $SHAPE == "one job per group" ]] && awk "BEGIN {exit !($ratio > $MAX_RATIO)}" && verdict="$verdict, too slow"
    printf "%s\t%.0f\t%.0f\t%s\t%s\t%s\n" "${label:-$1}" "$LOCAL_S" "$seconds" "$ratio" "$(tail -n 1 "$WORK/compare-$1.txt")" \
        "$verdict" >>"$WORK/summary.tsv"
    [[ $verdict == ok ]] || FAILED=1
}

FAILED=0
MODE=
KILL_RESUME=0
OVERLAY=()
SHAPE="one job per group"
while (($#)); do
    case $1 in
    --local-cluster) MODE=${2:?--local-cluster needs none, accounting or both}; shift 2 ;;
    --per-job) SHAPE="a SLURM job per job"; shift ;;
    --kill-resume) KILL_RESUME=1; SHAPE="a SLURM job per job"; shift ;;
    *) log "unknown option $1"; exit 2 ;;
    esac
done
if [[ $SHAPE == "a SLURM job per job" ]]; then
    printf "cluster:\n  one_job: false\n" >"$WORK/overlay.yaml"
    ((KILL_RESUME)) && printf "train:\n  checkpoint_every: 1\n  batch_size: 2\n" >>"$WORK/overlay.yaml"
    OVERLAY=("$WORK/overlay.yaml")
fi
printf "cluster\tlocal_s\tslurm_s\tratio\tfiles\tverdict\n" >"$WORK/summary.tsv"
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
log "$CONFIG, $SHAPE"
column -t -s $'\t' "$WORK/summary.tsv"
exit $FAILED
