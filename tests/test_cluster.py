"""The pipeline on a SLURM cluster: what each job asks for (leaktrace.jobsize,
rules/cluster.smk), checked offline; and, marked `cluster`, the micro config
run through config/profiles/slurm on whatever cluster `sinfo` answers,
against a local run (scripts/slurm-proof.sh)."""

import asyncio
import dataclasses
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
import yaml
from helpers import BASE_MODEL, REPO, snakemake, write_config
from plan_requests import planned_jobs, read_tsv

from leaktrace import jobsize


def test_parameter_count_reads_the_safetensors_headers():
    from safetensors import safe_open

    with safe_open(BASE_MODEL / "model.safetensors", "np") as weights:
        expected = sum(weights.get_tensor(name).size for name in weights.keys())
    assert jobsize.parameter_count(BASE_MODEL) == expected


RATES = jobsize.Rates.from_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text())["cluster"])


def test_memory_and_runtime_scale_with_the_model_and_the_data():
    rates = dataclasses.replace(RATES, base_mb=1000, safety=4, min_runtime=1, start_s=15, token_s=0, decode_step_s=0)
    tiny = jobsize.model_size(BASE_MODEL)
    big = jobsize.ModelSize(
        parameters=7_000_000_000, vocab_size=49152, hidden_size=4096, num_layers=32, max_positions=4096
    )
    common = {"batch_size": 8, "context": 512}
    # the tiny model's weights are 7 MB; its batch's float32 logits 3 x 8 x 512 x 4096 x 4 B = 201 MB, x1.25
    assert jobsize.model_memory_mb(tiny, rates, dtype="float32", on_gpu=False, training=False, **common) == 1000 + 300
    # 7B bfloat16 weights alone are 14 GB of host memory (x1.25), twice for two DDP processes, twice on a retry
    assert jobsize.model_memory_mb(big, rates, dtype="bfloat16", on_gpu=True, training=False, **common) == 1000 + 17_500
    assert jobsize.model_memory_mb(
        big, rates, dtype="bfloat16", on_gpu=True, training=False, processes=2, attempt=2, **common
    ) == 2 * (1000 + 35_000)
    assert jobsize.model_memory_mb(
        tiny, rates, dtype="float32", on_gpu=False, training=True, **common
    ) > jobsize.model_memory_mb(tiny, rates, dtype="float32", on_gpu=False, training=False, **common)
    # 1e9 tokens through 7B parameters (2 FLOPs each) and attention over 512 positions of 32 layers of 4096
    # (2 x 32 x 512 x 4096 = 134,217,728) at 1e14 FLOP/s: 141,342 s; plus 15 s of start-up, x4, in minutes
    seconds = jobsize.model_seconds(
        big, rates, kind="forward", tokens=10**9, generated=0, batch_size=8, context=512, flops_per_s=1e14
    )
    assert seconds == pytest.approx(141_342.177_28) and jobsize.runtime_min(seconds, rates) == 9424
    assert jobsize.flops_per_token(big, "train", 512) == 3 * jobsize.flops_per_token(big, "forward", 512)
    assert jobsize.runtime_min(0, rates) == 1 and jobsize.runtime_min(0, rates, attempt=2) == 2  # 15 s x4 = 1 min
    # sandboxed runs are shared by the workers; a table is held data_copies times
    assert jobsize.sandbox_seconds(3444, 2, dataclasses.replace(rates, sandbox_run_s=0.1)) == pytest.approx(172.2)
    table = jobsize.TableShape(rows=1335, bytes=903_427, originals=164)
    assert jobsize.cpu_memory_mb(table, dataclasses.replace(rates, data_copies=20)) == 1000 + 100  # 18 MB, rounded up
    assert jobsize.cpu_memory_mb(table, dataclasses.replace(rates, data_copies=20), processes=2) == 2000 + 100
    assert table.only_originals() == jobsize.TableShape(rows=164, bytes=110_983, originals=164)


def test_a_pretrained_models_size_is_known_from_its_shape():
    shipped = jobsize.model_size(BASE_MODEL)
    settings = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["base_model"]["pretrain"]["settings"]
    assert jobsize.llama_size(**settings) == shipped


# rules that only name files, or write a few bytes from the Snakefile's process (model_identity, input_digest): no job work
TARGET_RULES = {"all", "learning_rate_selection", "model_identity", "input_digest"}
USE = REPO / "tests" / "data" / "cluster" / "default_use.tsv"
INPUTS = REPO / "tests" / "data" / "cluster" / "default_inputs.tsv"
REGENERATE = "`.venv/bin/python scripts/job_use.py measure` (docs/guides/slurm.md)"


def test_every_job_of_the_default_run_asks_for_what_it_used_and_at_most_ten_times_that(tmp_path):
    """Each job's request (mem_mb, runtime), computed by the rules from the
    inputs the recorded default run had (tests/plan_requests.py), against what
    the job used in that run (scripts/job_use.py): at least the wall time and
    peak RSS, at most 10x them; a runtime of one minute, SLURM's smallest,
    is never too much. The upper bound is against the most any job of the
    same rule with the same request used: a request cannot know what a
    model will do with the same inputs (RQ3 runs each distinct completion
    once; a memorising target draws far fewer than the base model), so it is
    sized for the rule's most demanding job. A job of the default DAG with no
    measured use, or whose inputs the recorded run lacks (a new rule), fails
    here by name."""
    config = write_config(tmp_path, {}, base="config.yaml")
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "tests" / "plan_requests.py"),
            str(INPUTS),
            "--snakefile",
            str(REPO / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--cores",
            "2",
            "--configfile",
            str(config),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    used = {row["benchmark"]: row for row in read_tsv(USE)}
    jobs = [job for job in planned_jobs(result.stdout) if job["rule"] not in TARGET_RULES]
    assert len(jobs) > 90
    problems = []
    most: dict[tuple, tuple[float, float]] = {}  # (rule, runtime, mem_mb) -> the most seconds and MB its jobs used
    for job in jobs:
        if job["benchmark"] in used:
            key = (job["rule"], job["resources"].get("runtime"), job["resources"].get("mem_mb"))
            seconds, rss = float(used[job["benchmark"]]["s"]), float(used[job["benchmark"]]["max_rss_mb"])
            most[key] = tuple(map(max, most.get(key, (0.0, 0.0)), (seconds, rss)))
    for job in jobs:
        label, asks = f"rule {job['rule']} ({job['benchmark']})", job["resources"]
        if job["benchmark"] not in used:
            problems.append(f"{label}: no measured use in {USE.relative_to(REPO)}; measure it with {REGENERATE}")
            continue
        if not (asks.get("mem_mb", "").isdigit() and asks.get("runtime", "").isdigit()):
            problems.append(
                f"{label}: asks for mem_mb={asks.get('mem_mb')}, runtime={asks.get('runtime')}: every job "
                f"asks for both, from inputs the recorded run has ({INPUTS.relative_to(REPO)})"
            )
            continue
        seconds, rss = float(used[job["benchmark"]]["s"]), float(used[job["benchmark"]]["max_rss_mb"])
        most_seconds, most_rss = most[(job["rule"], asks["runtime"], asks["mem_mb"])]
        runtime_s, mem_mb = 60 * int(asks["runtime"]), int(asks["mem_mb"])
        if not seconds <= runtime_s <= max(10 * most_seconds, 60):
            problems.append(
                f"{label}: runtime {asks['runtime']} min for {seconds:.0f} s of use "
                f"(the rule's most with this request: {most_seconds:.0f} s)"
            )
        if not rss <= mem_mb <= 10 * most_rss:
            problems.append(
                f"{label}: mem_mb {mem_mb} for {rss:.0f} MB of use (the rule's most with this request: "
                f"{most_rss:.0f} MB)"
            )
    assert not problems, "\n".join(problems)


def experiment_configs() -> list[str]:
    return [
        "config/micro.yaml",
        *sorted(str(p.relative_to(REPO)) for p in (REPO / "config" / "experiments").glob("*.yaml")),
    ]


@pytest.mark.parametrize("configfile", experiment_configs())
def test_every_job_of_every_shipped_config_asks_for_memory_and_time(configfile, plan):
    """What a job asks for may wait for its inputs (<TBD> in a dry run), but
    every job asks: one that does not gets a whole node's memory and no time
    limit. The shipped models' pretraining and the learning-rate selection
    (make targets outside `all`) are planned with the micro config."""
    targets = (
        ["all", "pretrain_base_model", "pretrain_reference_model", "learning_rate_selection"]
        if configfile == "config/micro.yaml"
        else []
    )
    result = plan(configfile, targets=targets)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    jobs = [job for job in planned_jobs(result.stdout) if job["rule"] not in TARGET_RULES]
    assert jobs and (not targets or {"pretrain_base_model", "select_learning_rate"} <= {job["rule"] for job in jobs})
    missing = sorted(
        {
            f"rule {job['rule']}: no {', '.join(k for k in ('mem_mb', 'runtime') if k not in job['resources'])}"
            for job in jobs
            if not {"mem_mb", "runtime"} <= job["resources"].keys()
        }
    )
    assert not missing, (
        f"{configfile}: give these resources from cpu_job() or model_job() (rules/cluster.smk): {missing}"
    )


def resources_of(output: str, rule: str) -> list[str]:
    """The `resources:` lines of every job of ``rule`` in ``snakemake -n`` output."""
    jobs = re.split(r"\n(?=(?:local)?rule \w+:)", output)
    return [re.search(r"resources: (.*)", job).group(1) for job in jobs if re.match(rf"(?:local)?rule {rule}:", job)]


def test_gpu_jobs_go_to_the_gpu_partition_and_a_hub_model_is_fetched_once(tmp_path):
    config = write_config(
        tmp_path,
        {
            "base_model": {"path": "example-org/coder-7b", "device": "cuda", "dtype": "bfloat16"},
            "cluster": {"cpu_partition": "cpus", "gpu_partition": "gpus", "gpu_model": "a100", "one_job": False},
        },
    )
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
    config = write_config(
        tmp_path,
        {
            "base_model": {"path": "example-org/coder-7b", "device": "cuda", "dtype": "bfloat16"},
            "train": {"gpus": 4, "mixed_precision": "bf16", "effective_batch_size": 32, "batch_size": 4},
            "cluster": {"one_job": False},
        },
    )
    result = snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    assert result.returncode == 0, result.stderr + result.stdout
    lines = resources_of(result.stdout, "train_lora")
    assert lines and all("gpu=4" in line for line in lines)
    commands = re.findall(r"^Shell command: (.* -m leaktrace train .*)$", result.stdout, re.MULTILINE)
    assert commands and all(
        " -m accelerate.commands.launch --multi_gpu --num_processes 4 --main_process_port 0 -m leaktrace train" in c
        and c.startswith("HF_HUB_OFFLINE=1 ")
        for c in commands
    )
    checkpoints = {re.search(r"--checkpoint-dir (\S+)", c).group(1) for c in commands}
    assert len(checkpoints) == len(commands) and all(
        c.startswith(
            (
                "results/micro/checkpoints/train_lora/",
                "results/micro/checkpoints/train_sham/",
                "results/micro/checkpoints/train_twin/",
                "results/micro/checkpoints/train_watermark/",
            )
        )
        for c in checkpoints
    )
    # a preempted job is requeued by SLURM and resumes from those checkpoints
    profile = (REPO / "config" / "profiles" / "slurm" / "config.yaml").read_text()
    assert re.search(r"^leaktrace-slurm-requeue: true$", profile, re.MULTILINE)


@pytest.mark.parametrize(
    "device, one_job, partition", [("cuda", True, "gpus"), ("cpu", True, "cpus"), ("cpu", False, None)]
)
def test_one_job_puts_every_job_but_the_submit_host_ones_in_one_slurm_job(tmp_path, device, one_job, partition):
    config = write_config(
        tmp_path,
        {
            "base_model": {"path": "example-org/coder-7b", "device": device, "dtype": "bfloat16"},
            "cluster": {"cpu_partition": "cpus", "gpu_partition": "gpus", "gpu_model": "a100", "one_job": one_job},
        },
    )
    result = snakemake(tmp_path, "-n", "--executor", "leaktrace-slurm", "--jobs", "5", "--configfile", str(config))
    assert result.returncode == 0, result.stderr + result.stdout
    if not one_job:
        assert "Group job" not in result.stdout
        return
    assert result.stdout.count("Group job leaktrace") == 1
    before, group = result.stdout.split("Group job leaktrace")
    assert set(re.findall(r"^rule (\w+):", before, re.MULTILINE)) == {
        "fetch_hub_model",
        "model_identity",
        "input_digest",
        "ingest_benchmark",
        "ingest_corpus_shard",
    }
    grouped = re.findall(r"^    rule (\w+):", group, re.MULTILINE)
    # the bookkeeping rules too: a local job between two parts of the group would split it
    assert {"train_lora", "token_stats", "leakage_scan", "lexicon", "aggregate", "audit"} <= set(grouped)
    # a group's string resources must be equal in all its jobs: the allocation's
    resources = [
        dict(item.split("=", 1) for item in line.split(", "))
        for line in re.findall(r"^        resources: (.*)", group, re.MULTILINE)
    ]
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
    result = subprocess.run(
        [str(REPO / "scripts" / "slurm-proof.sh")], env=env, capture_output=True, text=True, timeout=3600
    )
    summary = (tmp_path / "summary.tsv").read_text() if (tmp_path / "summary.tsv").exists() else ""
    assert result.returncode == 0, summary + result.stderr[-3000:]
    assert "all equal byte for byte" in summary


def test_a_pinned_corpus_refuses_other_content():
    from dataclasses import replace

    from leaktrace.data.corpora import corpus_documents, fingerprint
    from leaktrace.settings.ingest import CorpusEntry

    settings = CorpusEntry(source="pydoc", exclude=())
    digest = fingerprint(corpus_documents("pydoc", settings))
    assert len(corpus_documents("pydoc", replace(settings, sha256=digest))) > 0
    with pytest.raises(ValueError, match="another Python release"):
        corpus_documents("pydoc", replace(settings, sha256="0" * 64))


SINFO = """cpu*|2|23081|(null)|infinite
gpu|16|128000|gpu:h100:4(S:0-1)|2-00:00:00
gpu|8|64000|gpu:a100:2|2-00:00:00
short|4|8000|(null)|30:00
"""


def test_partition_limits_are_read_from_sinfo():
    from snakemake_executor_plugin_leaktrace_slurm.partitions import minutes, parse_sinfo

    partitions = parse_sinfo(SINFO)
    assert partitions[None] is partitions["cpu"] and partitions["cpu"].max_minutes is None
    assert (partitions["gpu"].cpus, partitions["gpu"].mem_mb, partitions["gpu"].gpus) == (16, 128000, 4)
    assert partitions["gpu"].max_minutes == 2880 and partitions["short"].max_minutes == 30
    assert [minutes(t) for t in ("1:30:00", "45", "45:30", "3-12", "1-00:00:01", "UNLIMITED")] == [
        90,
        45,
        46,
        5040,
        1441,
        None,
    ]


def test_a_request_no_node_of_its_partition_can_meet_is_named_with_the_limit():
    from snakemake_executor_plugin_leaktrace_slurm.partitions import parse_sinfo, request_problems

    partitions = parse_sinfo(SINFO)
    assert request_problems({"cpus": 2, "mem_mb": 5700, "gpus": 0, "runtime_min": 20}, partitions["cpu"]) == []
    # the micro config's one-job group as Snakemake sized it without --cores
    assert request_problems({"cpus": 17, "mem_mb": 41100, "gpus": 0, "runtime_min": 20}, partitions["cpu"]) == [
        "it asks for 17 CPUs, the partition's largest node has 2 (sinfo)",
        "it asks for 41100 MB of memory, the partition's largest node has 23081 (sinfo)",
    ]
    assert request_problems({"cpus": 1, "mem_mb": 100, "runtime_min": 31}, partitions["short"]) == [
        "it asks for 31 min, the partition's time limit is 30 min (sinfo)"
    ]
    # 4 GPUs exist, 100 GB exists, but not on one node with 12 CPUs... the H100 node has all three
    assert request_problems({"cpus": 12, "mem_mb": 100_000, "gpus": 4}, partitions["gpu"]) == []
    assert request_problems(
        {"cpus": 12, "mem_mb": 100_000, "gpus": 3, "runtime_min": None},
        parse_sinfo("gpu|16|64000|gpu:4|infinite\ngpu|16|128000|gpu:2|infinite\n")["gpu"],
    ) == ["no single node of the partition has 12 CPUs, 100000 MB of memory, 3 GPUs"]


def fake_job(name, threads=1, group=False, **resources):
    """What the executor reads of a Snakemake job."""
    requested = SimpleNamespace(**resources, get=lambda key, default=None: resources.get(key, default))
    return SimpleNamespace(
        name=name,
        groupid=name,
        threads=threads,
        is_group=lambda: group,
        wildcards_dict={"seed": 0},
        resources=requested,
    )


def test_the_executor_stops_the_run_on_a_job_too_large_for_its_partition():
    from snakemake_interface_common.exceptions import WorkflowError

    from snakemake_executor_plugin_leaktrace_slurm import Executor
    from snakemake_executor_plugin_leaktrace_slurm.partitions import parse_sinfo

    executor = object.__new__(Executor)
    executor._node_limits = parse_sinfo(SINFO)
    with pytest.raises(
        WorkflowError,
        match=r"rule train_lora \(seed=0\) cannot run on partition 'short': it asks for "
        r"64000 MB of memory, the partition's largest node has 8000 \(sinfo\)",
    ):
        executor.run_jobs([fake_job("train_lora", mem_mb=64000, runtime=10, slurm_partition="short")])


def test_slurm_job_names_carry_the_rule_and_status_asks_for_every_name():
    from snakemake_executor_plugin_leaktrace_slurm import Executor, job_name

    executor = object.__new__(Executor)
    executor._submitting = threading.local()
    executor.run_uuid = "0f1e2d3c-aaaa-bbbb-cccc-000000000000"  # what the slurm plugin sets
    executor._status_names = "train_lora-0f1e2d3c,variants-0f1e2d3c"
    assert job_name(fake_job("variants"), executor._run_id) == "variants-0f1e2d3c"
    assert job_name(fake_job("leaktrace", group=True), executor._run_id) == "leaktrace-0f1e2d3c"
    assert executor.run_uuid == "train_lora-0f1e2d3c,variants-0f1e2d3c"  # squeue/sacct --name
    executor._submitting.job = fake_job("train_lora")  # inside run_job, in the submitting thread
    assert executor.run_uuid == "train_lora-0f1e2d3c"
    names = []
    other = threading.Thread(target=lambda: names.append(executor.run_uuid))  # the status checks' thread
    other.start()
    other.join()
    assert names == ["train_lora-0f1e2d3c,variants-0f1e2d3c"]


def test_no_account_skips_the_slurm_plugins_account_guess_unless_the_job_names_one():
    from snakemake_executor_plugin_leaktrace_slurm import Executor

    executor = object.__new__(Executor)
    executor.workflow = SimpleNamespace(executor_settings=SimpleNamespace(no_account=True))
    executor.logger = None
    assert list(executor.get_account_arg(fake_job("variants"))) == [""]
    executor._fallback_account_arg = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("snakemake_executor_plugin_slurm.validate_account", lambda account, logger: account)
        assert list(executor.get_account_arg(fake_job("variants", slurm_account="lab"))) == [" -A lab"]


def test_a_group_is_sized_to_one_node_of_its_partition():
    from snakemake.common.tbdstring import TBDString
    from snakemake_interface_common.exceptions import WorkflowError

    from snakemake_executor_plugin_leaktrace_slurm import Executor
    from snakemake_executor_plugin_leaktrace_slurm.partitions import parse_sinfo

    executor = object.__new__(Executor)
    executor.logger = SimpleNamespace(info=lambda message: None)
    # eight model jobs that could run at once: 16 CPUs and 45,600 MB were Snakemake's size without --cores
    members = [
        SimpleNamespace(
            **{
                **vars(fake_job("token_stats", threads=2)),
                "pipe_group": None,
                "resources": {"_cores": 2, "mem_mb": 5700, "runtime": 3},
            }
        )
        for _ in range(8)
    ]
    group = SimpleNamespace(groupid="leaktrace", toposorted=[members], jobs=members, is_group=lambda: True)
    executor._fit_group(group, parse_sinfo(SINFO)["cpu"])
    assert (group._resources["_cores"], group._resources["mem_mb"], group._resources["runtime"]) == (2, 5700, 24)
    members[0].resources["runtime"] = TBDString()  # its inputs are made inside the group
    executor._fit_group(group, parse_sinfo(SINFO)["cpu"])
    assert group._resources["runtime"] == "infinite"
    executor._fit_group(group, parse_sinfo(SINFO)["gpu"])
    assert group._resources["runtime"] == 2880
    members[1].resources["mem_mb"] = 64_000
    with pytest.raises(
        WorkflowError,
        match=r"group 'leaktrace' \(8 jobs\) cannot run on partition 'cpu': its rule "
        r"token_stats \(seed=0\): it asks for 64000 MB of memory, the partition's "
        r"largest node has 23081 \(sinfo\)",
    ):
        executor._fit_group(group, parse_sinfo(SINFO)["cpu"])


def test_a_retry_gets_more_time_even_where_the_floor_set_the_first_attempts():
    """The floor applies before the attempt's factor: 10 s of work x2 safety is
    under a minute, so the first attempt asks for the 1-minute floor and the
    retry for 2 minutes (the floor absorbed the doubling when applied last)."""
    rates = dataclasses.replace(RATES, safety=2, min_runtime=1, start_s=0)
    assert [jobsize.runtime_min(10, rates, attempt=a) for a in (1, 2, 3)] == [1, 2, 3]
    rates = dataclasses.replace(rates, min_runtime=5)
    assert [jobsize.runtime_min(10, rates, attempt=a) for a in (1, 2)] == [5, 10]
    assert jobsize.runtime_min(600, rates, attempt=2) == 2 * 20  # above the floor: ceil(600 x 2 / 60) = 20, doubled


def cluster_requests(*args: str, cwd: Path = REPO) -> list[list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "leaktrace.cluster_requests", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [line.split("\t") for line in result.stdout.splitlines()]


def test_the_requests_of_a_dry_run_name_the_submit_host_the_rules_threads_and_the_group(tmp_path):
    """python -m leaktrace.cluster_requests: per job where it runs, the rule's
    threads uncapped by a dry run's --cores, and the group's request."""
    config = write_config(tmp_path, {"cluster": {"one_job": True, "cpu_partition": "cpu"}})
    table = cluster_requests(
        "--node",
        "16,64000,0",
        "--",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--configfile",
        str(config),
    )
    split = table.index([""])
    jobs = {row[0]: dict(zip(table[0], row, strict=True)) for row in table[1:split]}
    groups = [dict(zip(table[split + 1], row, strict=True)) for row in table[split + 2 :]]
    assert {name.split("[")[0] for name, job in jobs.items() if job["where"] == "submit host"} == {
        "ingest_benchmark",
        "ingest_corpus_shard",
        "model_identity",
        "input_digest",
    }
    assert jobs["variants[benchmark=humaneval]"]["cpus"] == "2"  # threads: 2, whatever a dry run's --cores
    assert jobs["ingest_benchmark[benchmark=humaneval]"]["runtime_min"].isdigit()  # no input: sized now
    assert jobs["aggregate[benchmark=humaneval]"]["runtime_min"] == "sized at submission"  # from inputs made by the run
    in_group = [job for job in jobs.values() if job["where"] != "submit host"]
    assert all(job["where"] == "cpu" for job in in_group)
    # one group of every other job, bounded by the node, asking for the partition's time limit: some of its
    # jobs read inputs made inside it
    assert groups == [
        {
            "group": "leaktrace",
            "jobs": str(len(in_group)),
            "where": "cpu",
            "cpus": groups[0]["cpus"],
            "mem_mb": groups[0]["mem_mb"],
            "gpus": "0",
            "runtime_min": "the partition time limit",
        }
    ]
    assert 2 <= int(groups[0]["cpus"]) <= 16 and int(groups[0]["mem_mb"]) <= 64000
