"""Shared fixtures: a tiny random Llama with its own BPE tokenizer, saved to a
temporary directory, so model code is tested on real local files and never
reaches a hub."""

import os
import random
import subprocess
import sys

# Tests never reach a network: the hub client reads this when it is imported.
os.environ["HF_HUB_OFFLINE"] = "1"

import pytest  # noqa: E402
from helpers import TRAINING_TEXT, run_micro, shared_once
from hypothesis import settings  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM

from leaktrace.models.tokenizer import train_bpe_tokenizer
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level
from leaktrace.seeding import seed_everything

# Property tests check behaviour, not speed (speed is the benchmarks' job): no
# per-example deadline, which a loaded CI machine broke (265 ms for a parse
# that takes 0.2 ms), and no example database written into the checkout.
settings.register_profile("leaktrace", deadline=None, database=None)
settings.load_profile("leaktrace")


def pytest_addoption(parser):
    parser.addoption(
        "--shuffle",
        type=int,
        default=None,
        metavar="SEED",
        help="run the tests in an order shuffled by SEED: no test may depend on another having run first",
    )


def pytest_collection_modifyitems(config, items):
    """With ``--shuffle SEED`` the collected tests in a seeded random order (the same on every
    pytest-xdist worker, which must collect the same list)."""
    seed = config.getoption("--shuffle")
    if seed is not None:
        random.Random(seed).shuffle(items)


@pytest.fixture
def full_isolation():
    """Skip a test that needs the sandbox's full isolation where the platform lacks it."""
    try:
        isolation_level(SandboxLimits(isolation="full"))
    except SandboxUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    seed_everything(0)
    tokenizer = train_bpe_tokenizer(TRAINING_TEXT, vocab_size=400)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def micro_run(tmp_path_factory):
    """(the copy the micro run ran in, the config it ran with: the default
    with config/micro.yaml laid over it, as Snakemake lays it, written out).
    One run for the whole test session, whichever pytest-xdist worker asks first."""

    def make(workdir):
        import yaml
        from snakemake.utils import update_config

        from leaktrace.configuration import drop_removed_entries

        run_micro(workdir)
        config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
        update_config(config, yaml.safe_load((workdir / "config" / "micro.yaml").read_text()))
        drop_removed_entries(config)
        (workdir / "micro-effective.yaml").write_text(yaml.safe_dump(config))

    workdir = shared_once(tmp_path_factory, "micro", make)
    return workdir, workdir / "micro-effective.yaml"


@pytest.fixture(scope="session")
def audit_run(tmp_path_factory):
    """The README's audit command (repo_copy.AUDIT_COMMAND, config/experiments/audit.yaml),
    literally, from the root of a fresh copy: its results directory. Shared by
    tests/test_audit.py and the README test, one run for the whole session."""

    def make(workdir):
        import shlex
        import subprocess

        from repo_copy import AUDIT_COMMAND, fresh_copy

        fresh_copy(workdir)
        result = subprocess.run(shlex.split(AUDIT_COMMAND), cwd=workdir, capture_output=True, text=True, timeout=2400)
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]

    return shared_once(tmp_path_factory, "audit", make) / "results" / "audit"


@pytest.fixture(scope="session")
def plan(tmp_path_factory):
    """A dry run from the root of a fresh copy, made once per session:
    ``plan(*configfiles, targets=())`` is ``snakemake --cores all --configfile
    ... --dry-run -p [targets]`` of config files laid over the default, and
    ``plan(argv=[...])`` any other dry run. The README, cluster and experiment
    tests ask for the same plans; each is made once."""
    from helpers import shared_plan
    from repo_copy import fresh_copy

    def plans_copy(directory):
        fresh_copy(directory)
        # config/experiments/python-corpus.yaml reads a corpus a clone builds (scripts/build_python_corpus.py):
        # a small one, so that the plan of its 16 scan jobs has its 16 Parquet files
        subprocess.run(
            [
                sys.executable,
                "scripts/build_python_corpus.py",
                "--out",
                "resources/python-corpus",
                "--shards",
                "16",
                "--limit",
                "32",
            ],
            cwd=directory,
            check=True,
            capture_output=True,
        )

    copy = shared_once(tmp_path_factory, "plans-copy", plans_copy)

    def planned(*configfiles, targets=(), argv=None):
        if argv is None:
            argv = [".venv/bin/snakemake", "--cores", "all", "--configfile", *configfiles, "--dry-run", "-p", *targets]
        return shared_plan(tmp_path_factory, copy, list(argv))

    return planned
