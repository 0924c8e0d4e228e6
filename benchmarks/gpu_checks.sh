#!/usr/bin/env bash
# The GPU checks of one GPU node, in one go, from the repository root: the
# CUDA tests (tests/test_gpu.py), then the throughput figures of the README's
# cost model (scoring, greedy generation and LoRA training of random
# Llamas: 1b, and 7b for scoring and generation). Each step has a time limit
# and a failed step does not stop the others; everything is logged to $1
# (default: gpu-checks.log). PYTHON names the interpreter (default: python3).
#
#   benchmarks/gpu_checks.sh [LOG]
set -u
log=${1:-gpu-checks.log}
py=${PYTHON:-python3}
export PYTHONPATH=workflow${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
model7b=$(mktemp -d)
trap 'rm -rf "$model7b"' EXIT

step() {  # step SECONDS TITLE COMMAND...
    local limit=$1 title=$2 start=$SECONDS
    shift 2
    echo "=== $title" >>"$log"
    timeout "$limit" "$@" >>"$log" 2>&1
    echo "=== $title: exit $? after $((SECONDS - start)) s" >>"$log"
}

: >"$log"
step 30 "the machine" bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; $py -c 'import sys, torch, transformers, peft, accelerate; print(sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__, peft.__version__, accelerate.__version__)'"
step 240 "CUDA tests" "$py" -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider
step 150 "scoring, 1b" "$py" benchmarks/scoring_throughput.py --size 1b
step 120 "generation, 1b" "$py" benchmarks/generation_throughput.py --size 1b
step 180 "LoRA training, 1b" "$py" benchmarks/train_throughput.py --size 1b --batch-size 4 --peak-tflops 989 --gradient-checkpointing
step 120 "a random 7b model" "$py" -c "import sys; from pathlib import Path; sys.path.insert(0, 'benchmarks'); from scoring_throughput import random_llama; random_llama('7b', Path('$model7b'))"
step 120 "scoring, 7b" "$py" benchmarks/scoring_throughput.py --model "$model7b" --new-only --repeat 1
step 120 "generation, 7b" "$py" benchmarks/generation_throughput.py --model "$model7b"
