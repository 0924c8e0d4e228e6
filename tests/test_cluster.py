"""The pipeline on a SLURM cluster: what each job asks for (leaktrace.jobsize,
rules/cluster.smk), checked offline; and, marked `cluster`, the micro config
run through config/profiles/slurm on whatever cluster `sinfo` answers,
against a local run (scripts/slurm-proof.sh)."""

import asyncio
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaktrace import jobsize
from test_pipeline import BASE_MODEL, REPO, snakemake, write_config


def test_parameter_count_reads_the_safetensors_headers():
    from safetensors import safe_open

    with safe_open(BASE_MODEL / "model.safetensors", "np") as weights:
        expected = sum(weights.get_tensor(name).size for name in weights.keys())
    assert jobsize.parameter_count(BASE_MODEL) == expected


def test_memory_and_runtime_scale_with_the_model_and_the_data():
    tiny = jobsize.model_size(BASE_MODEL)
    big = jobsize.ModelSize(parameters=7_000_000_000, vocab_size=49152, hidden_size=4096, num_layers=32, max_positions=4096)
    common = {"batch_size": 8, "context": 512, "overhead_mb": 2000}
    assert jobsize.memory_mb(tiny, dtype="float32", on_gpu=False, training=False, **common) < 4000
    # 7B bfloat16 weights alone are 14 GB of host memory
    assert jobsize.memory_mb(big, dtype="bfloat16", on_gpu=True, training=False, **common) > 2000 + 14_000
    assert (jobsize.memory_mb(tiny, dtype="float32", on_gpu=False, training=True, **common)
            > jobsize.memory_mb(tiny, dtype="float32", on_gpu=False, training=False, **common))
    timing = {"kind": "forward", "passes": 1, "flops_per_s": 1e14, "safety": 4, "minimum": 10}
    assert jobsize.runtime_min(tiny, tokens=10_000, **timing) == 10  # the floor
    # 1e9 tokens through 7B parameters at 1e14 FLOP/s: 1.4e5 s, x4
    assert jobsize.runtime_min(big, tokens=1_000_000_000, **timing) == 9334


def resources_of(output: str, rule: str) -> list[str]:
    """The `resources:` lines of every job of ``rule`` in ``snakemake -n`` output."""
    jobs = re.split(r"\n(?=(?:local)?rule \w+:)", output)
    return [re.search(r"resources: (.*)", job).group(1) for job in jobs if re.match(rf"(?:local)?rule {rule}:", job)]


def test_gpu_jobs_go_to_the_gpu_partition_and_a_hub_model_is_fetched_once(tmp_path):
    config = write_config(tmp_path, {
        "base_model": {"path": "example-org/coder-7b", "device": "cuda", "dtype": "bfloat16"},
        "cluster": {"cpu_partition": "cpus", "gpu_partition": "gpus", "gpu_model": "a100", "one_job": False},
    })
    result = snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert len(re.findall(r"^(?:local)?rule fetch_hub_model:", out, re.MULTILINE)) == 1
    assert "output: resources/hub/example-org--coder-7b/config.json" in out
    for rule in ("train_lora", "counterfactual"):
        line = resources_of(out, rule)[0]
        assert "gpu=1" in line and "gpu_model=a100" in line and "slurm_partition=gpus" in line, line
    targets = [line for line in resources_of(out, "token_stats") if "gpu=1" in line]
    assert targets and all("slurm_partition=gpus" in line for line in targets)
    # the audit's own CPU model and the leakage scan's shards stay off the GPU nodes
    assert any("gpu=0" in line and "slurm_partition=cpus" in line for line in resources_of(out, "token_stats"))
    assert all("slurm_partition=cpus" in line for line in resources_of(out, "leakage_scan"))
    # and so does a rule that asks for nothing else: not to the cluster's default partition
    assert all("slurm_partition=cpus" in line for line in resources_of(out, "counterfactual_structural"))
    # jobs read the fetched copy offline; only the fetch and the leakage rules may reach the hub
    commands = re.findall(r"^Shell command: (.*? -m leaktrace [\w-]+)", out, re.MULTILINE)
    assert all(("HF_HUB_OFFLINE=1" in c) != bool(re.search(r"fetch-model|leakage-(scan|gather)", c)) for c in commands)
    assert any("tokens" in c for c in commands)


def test_multi_gpu_training_runs_under_accelerate_launch_and_checkpoints_outside_its_outputs(tmp_path):
    config = write_config(tmp_path, {
        "base_model": {"path": "example-org/coder-7b", "device": "cuda", "dtype": "bfloat16"},
        "train": {"gpus": 4, "mixed_precision": "bf16", "effective_batch_size": 32, "batch_size": 4},
        "cluster": {"one_job": False},
    })
    result = snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    assert result.returncode == 0, result.stderr + result.stdout
    lines = resources_of(result.stdout, "train_lora")
    assert lines and all("gpu=4" in line for line in lines)
    commands = re.findall(r"^Shell command: (.* -m leaktrace train .*)$", result.stdout, re.MULTILINE)
    assert commands and all(" -m accelerate.commands.launch --multi_gpu --num_processes 4 --main_process_port 0 -m leaktrace train"
                            in c and c.startswith("HF_HUB_OFFLINE=1 ") for c in commands)
    checkpoints = {re.search(r"--checkpoint-dir (\S+)", c).group(1) for c in commands}
    assert len(checkpoints) == len(commands) and all(c.startswith(("results/micro/checkpoints/train_lora/",
                                                                   "results/micro/checkpoints/train_sham/",
                                                                   "results/micro/checkpoints/train_twin/")) for c in checkpoints)
    # a preempted job is requeued by SLURM and resumes from those checkpoints
    profile = (REPO / "config" / "profiles" / "slurm" / "config.yaml").read_text()
    assert re.search(r"^leaktrace-slurm-requeue: true$", profile, re.MULTILINE)


@pytest.mark.parametrize("device, one_job, partition", [("cuda", True, "gpus"), ("cpu", True, "cpus"), ("cpu", False, None)])
def test_one_job_puts_every_job_but_the_submit_host_ones_in_one_slurm_job(tmp_path, device, one_job, partition):
    config = write_config(tmp_path, {
        "base_model": {"path": "example-org/coder-7b", "device": device, "dtype": "bfloat16"},
        "cluster": {"cpu_partition": "cpus", "gpu_partition": "gpus", "gpu_model": "a100", "one_job": one_job},
    })
    result = snakemake(tmp_path, "-n", "--executor", "leaktrace-slurm", "--jobs", "5", "--configfile", str(config))
    assert result.returncode == 0, result.stderr + result.stdout
    if not one_job:
        assert "Group job" not in result.stdout
        return
    assert result.stdout.count("Group job leaktrace") == 1
    before, group = result.stdout.split("Group job leaktrace")
    assert set(re.findall(r"^rule (\w+):", before, re.MULTILINE)) == {"fetch_hub_model", "ingest_benchmark",
                                                                     "ingest_corpus_shard"}
    grouped = re.findall(r"^    rule (\w+):", group, re.MULTILINE)
    # the bookkeeping rules too: a local job between two parts of the group would split it
    assert {"train_lora", "token_stats", "leakage_scan", "lexicon", "aggregate", "audit"} <= set(grouped)
    # a group's string resources must be equal in all its jobs: the allocation's
    resources = [dict(item.split("=", 1) for item in line.split(", "))
                 for line in re.findall(r"^        resources: (.*)", group, re.MULTILINE)]
    gpu_model = "a100" if device == "cuda" else ""
    assert len(resources) == len(grouped)
    assert all(r["slurm_partition"] == partition and r["gpu_model"] == gpu_model for r in resources), resources


def test_the_executor_runs_each_slurm_jobs_snakemake_with_the_local_executor():
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

    from leaktrace.forkserver import START_VARIABLE

    plugin = ExecutorPluginRegistry().get_plugin("leaktrace-slurm")
    executor = object.__new__(plugin.executor)
    assert executor.additional_general_args() == "--executor local"
    # only a group's Snakemake starts a fork server
    assert executor.get_job_exec_prefix(SimpleNamespace(is_group=lambda: True)) == f"export {START_VARIABLE}=1"
    assert executor.get_job_exec_prefix(SimpleNamespace(is_group=lambda: False)) == ""


def test_status_checks_wait_at_most_the_cap_and_no_longer_once_the_run_is_over():
    from snakemake_executor_plugin_leaktrace_slurm import Executor

    executor = object.__new__(Executor)
    executor.workflow = SimpleNamespace(executor_settings=SimpleNamespace(max_seconds_between_status_checks=1))
    executor.next_seconds_between_status_checks = 180  # where the slurm plugin's back-off ends
    executor.wait = True
    start = time.monotonic()
    asyncio.run(executor.sleep())
    assert 0.9 < time.monotonic() - start < 10
    executor.workflow.executor_settings.max_seconds_between_status_checks = None
    threading.Timer(0.5, setattr, (executor, "wait", False)).start()  # what shutdown() does
    start = time.monotonic()
    asyncio.run(executor.sleep())
    assert time.monotonic() - start < 10


def _cluster_answers() -> bool:
    return shutil.which("sinfo") is not None and subprocess.run(["sinfo", "-h"], capture_output=True).returncode == 0


@pytest.mark.cluster
@pytest.mark.skipif(not _cluster_answers(), reason="no SLURM cluster answers (sinfo)")
def test_micro_config_through_the_slurm_profile_equals_a_local_run(tmp_path):
    env = {**os.environ, "WORK": str(tmp_path), "SNAKEMAKE": str(Path(sys.executable).parent / "snakemake")}
    result = subprocess.run([str(REPO / "scripts" / "slurm-proof.sh")], env=env, capture_output=True, text=True,
                            timeout=3600)
    summary = (tmp_path / "summary.tsv").read_text() if (tmp_path / "summary.tsv").exists() else ""
    assert result.returncode == 0, summary + result.stderr[-3000:]
    assert "all equal byte for byte" in summary


def test_a_pinned_corpus_refuses_other_content():
    from leaktrace.data.corpora import corpus_documents, fingerprint

    settings = {"source": "pydoc"}
    digest = fingerprint(corpus_documents("pydoc", settings))
    assert len(corpus_documents("pydoc", {**settings, "sha256": digest})) > 0
    with pytest.raises(ValueError, match="another Python release"):
        corpus_documents("pydoc", {**settings, "sha256": "0" * 64})
