"""The README is executable, and so is the documentation under docs/: every
command in their ``bash`` blocks runs here, literally, from the repository
root of a fresh copy, so a documented command can never rot. A guide that has
the reader write files (code blocks with a ``title``: a file to create, or a
unified diff to apply) is followed as written: its files are made in a fresh
copy of its own, and then its commands run there. The smoke run runs for real (it is the micro run the
pipeline tests share, see tests/test_pipeline.py); a command that would train,
score or install runs as a dry run of exactly that command; a speed script's
flags are checked against its argument parser, a ``python -m leaktrace``
command's against its ``--help``; the local SLURM cluster's
scripts, which start daemons, are checked for syntax and usage here and run
by the ``cluster`` test. A command no rule below covers fails the test: a
new README command needs a rule here."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from repo_copy import AUDIT_COMMAND, MICRO_COMMAND, REPO, fresh_copy

TIMEOUT = 300
DOCS = REPO / "docs"
# The randomized publication's commands (docs/guides/publish-a-benchmark.md, "Publish, then test a model"): run
# as written, in the guide's order, on the shipped five-problem HumanEval file and the shipped model.
MAINTAINER_COMMANDS = ("publish", "watermark-test")
MAINTAINER_GUIDE = DOCS / "guides" / "publish-a-benchmark.md"
# A fenced block with a title is a file the reader writes (```python title="path"```),
# or, in a ```diff block, a change the reader applies (a unified diff).
FILE_BLOCK = re.compile(r'^```(\w+) title="([^"]+)"\n(.*?)^```', re.DOTALL | re.MULTILINE)


def documentation_pages() -> list[Path]:
    """The pages of the documentation site (docs/, less its build hooks)."""
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def document_commands(path: Path) -> list[str]:
    """Every command line of a document's ``bash`` blocks, comments removed."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", path.read_text(), re.DOTALL | re.MULTILINE):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def guide_files(path: Path) -> list[tuple[str, str, str]]:
    """(language, path, text) of each file a page has the reader write or change."""
    return FILE_BLOCK.findall(path.read_text())


def guides() -> list[Path]:
    """The pages that have the reader write files: followed in a copy of their own."""
    return [p for p in documentation_pages() if guide_files(p)]


def readme_commands() -> list[str]:
    """Every command of the README and of the documentation pages that need no
    files of the reader's, each once, in order."""
    commands = [
        c
        for path in [REPO / "README.md", *documentation_pages()]
        if path not in guides()
        for c in document_commands(path)
    ]
    return list(dict.fromkeys(commands))


def how_to_check(command: str) -> tuple[str, list[str]] | None:
    """(how, argv) for a README command, or None when no rule covers it."""
    words = shlex.split(command)
    if command == MICRO_COMMAND:
        return "run for real by the micro-run fixture", words
    if command == AUDIT_COMMAND:
        return "run for real by the audit-run fixture", words
    if words[:2] in (["make", "test"], ["make", "test-all"], ["make", "docs"], ["make", ".venv/.installed"]):
        # the suite, the site (tests/test_docs.py builds it) and the environment itself: the recipe, printed
        return "make -n", ["make", "-n", "-o", ".venv/.installed", *words[1:]]
    if words[0] == "make":
        return "dry run", ["make", "-o", ".venv/.installed", *words[1:], "SNAKEMAKE_FLAGS=--dry-run"]
    if words[0] == ".venv/bin/snakemake" and "--report" not in words:
        return "dry run", [*words, "--dry-run", "-p"]
    if words[0] == ".venv/bin/snakemake":
        return "report of the micro run", [*words, "--configfile", "config/micro.yaml"]
    if words[0] == ".venv/bin/python" and words[1].startswith(("benchmarks/", "scripts/")):
        return "flags against the script's parser", words
    if words[:3] == [".venv/bin/python", "-m", "leaktrace"] and words[3] in MAINTAINER_COMMANDS:
        return "run for real: a maintainer's release", words  # in order, by test_readme_maintainer_commands_run
    if words[:3] == [".venv/bin/python", "-m", "pytest"]:  # a guide's tests (of files it had the reader write)
        return "pytest, run for real", words
    if words[0] == ".venv/bin/leaktrace":  # the person-facing commands: planned through Snakemake, nothing run
        return "dry run", [*words, "--dry-run"]
    if words[:3] == [".venv/bin/python", "-m", "leaktrace"]:  # a command on a user's own files
        return "flags against the command's --help", [*words[:4], "--help"]
    if words[0].startswith("scripts/slurm-") or words[0] == "benchmarks/gpu_checks.sh":
        # daemons (run by the `cluster` test where sinfo answers), a GPU (its tests are `pytest -m gpu`)
        return "script for other hardware: syntax and usage", ["bash", "-n", words[0]]
    return None


def test_every_readme_command_has_a_check():
    commands = readme_commands()
    assert (
        MICRO_COMMAND in commands and AUDIT_COMMAND in commands and "make run" in commands and "make test" in commands
    )
    guide_commands = [c for page in guides() for c in document_commands(page)]
    assert [c for c in commands + guide_commands if how_to_check(c) is None] == []


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return fresh_copy(tmp_path_factory.mktemp("readme"))


def parser_flags(script: Path) -> set[str]:
    """The options a script's argparse parser declares (its add_argument calls),
    read from the source: importing a speed script costs seconds of imports."""
    flags = {"--help"}
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            flags |= {a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}
    return flags


def checked_by(how: str) -> list[str]:
    return [c for c in readme_commands() if how_to_check(c) and how_to_check(c)[0] == how]


def check_command(command: str, cwd: Path, env: dict[str, str] | None = None, plan=None) -> None:
    """Run or check one documented command as ``how_to_check`` says, from
    ``cwd``; a Snakemake dry run through ``plan`` (the session's shared
    plans, in a fresh copy of their own) where it is given."""
    how, argv = how_to_check(command)
    words = shlex.split(command)
    if how == "script for other hardware: syntax and usage":
        result = subprocess.run(["bash", "-n", words[0]], cwd=cwd, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        usage = (cwd / words[0]).read_text().split("\nset -")[0]  # the header comment
        assert all(word in usage for word in words[1:]), f"{command!r}: not in {words[0]}'s usage"
        return
    if how == "flags against the script's parser":
        script = cwd / words[1]
        assert script.is_file(), f"{command!r}: no {words[1]}"
        used = {w.split("=")[0] for w in words[2:] if w.startswith("--")}
        assert used <= parser_flags(script), (
            f"{command!r}: {sorted(used - parser_flags(script))} not declared by {words[1]}"
        )
        return
    assert how != "report of the micro run", f"{command!r}: the report is checked on the micro run only"
    if plan is not None and how == "dry run" and argv[0] == ".venv/bin/snakemake":
        result = plan(argv=argv)
    else:
        result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{command!r} ({how}) failed:\n{output[-3000:]}"
    if how == "dry run":
        assert "Job stats" in output or "Nothing to be done" in output, output[-2000:]
    if how == "flags against the command's --help":
        used = {w.split("=")[0] for w in words[4:] if w.startswith("--")}
        assert all(flag in result.stdout for flag in used), f"{command!r}: {used} not all in --help:\n{result.stdout}"


@pytest.mark.parametrize("command", checked_by("dry run") + checked_by("make -n") + checked_by("pytest, run for real"))
def test_readme_command_works_as_written(command, copy, plan):
    check_command(command, copy, plan=plan)


def test_readme_maintainer_commands_run_as_written(copy):
    """Publish, then test the release under the shipped model: each command
    as the publishing guide writes it, from the fresh copy's root, in its order."""
    commands = checked_by("run for real: a maintainer's release")
    assert [shlex.split(c)[3] for c in commands] == list(MAINTAINER_COMMANDS)
    assert commands == [c for c in document_commands(MAINTAINER_GUIDE) if c in commands], (
        "the guide's commands, in its order"
    )
    for command in commands:
        result = subprocess.run(shlex.split(command), cwd=copy, capture_output=True, text=True, timeout=TIMEOUT)
        assert result.returncode == 0, f"{command!r} failed:\n{result.stderr[-3000:]}"
    release = copy / shlex.split(commands[0])[5]
    assert (release / "published.jsonl").is_file() and (release / "commitment.json").is_file()
    assert (release / "private" / "secret.key").stat().st_mode & 0o077 == 0
    assert list((release / "private" / "tests").glob("*/result.parquet"))


@pytest.mark.parametrize("command", checked_by("flags against the command's --help"))
def test_readme_cli_command_flags_exist(command, copy):
    check_command(command, copy)


@pytest.mark.parametrize("command", checked_by("script for other hardware: syntax and usage"))
def test_readme_hardware_script_parses_and_documents_its_arguments(command):
    check_command(command, REPO)


@pytest.mark.parametrize("command", checked_by("flags against the script's parser"))
def test_readme_speed_script_flags_exist(command):
    check_command(command, REPO)


def follow_guide(page: Path, destination: Path) -> Path:
    """A fresh copy of the repository with a guide's files written and its
    changes applied (``git apply``, which needs no repository), in its order."""
    copy = fresh_copy(destination)
    for language, name, text in guide_files(page):
        if language == "diff":
            result = subprocess.run(
                ["git", "apply", "--recount", "-"], cwd=copy, input=text, capture_output=True, text=True
            )
            assert result.returncode == 0, f"{page.name}: its change to {name} does not apply:\n{result.stderr}"
            continue
        target = copy / name
        assert not target.exists(), f"{page.name}: {name} would overwrite a file of the repository"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return copy


@pytest.mark.parametrize("page", guides(), ids=lambda page: page.stem)
def test_guide_runs_as_written_from_a_fresh_copy(page, tmp_path):
    """Follow a guide: write its files, apply its changes, run its commands
    (dry runs where they train, as above). The copy's own package is imported
    (PYTHONPATH), as a clone's editable install would import it."""
    copy = follow_guide(page, tmp_path)
    # as a user's shell runs them: not with the options of the pytest running this test (a --basetemp in
    # PYTEST_ADDOPTS would be a parent of the copy, which a guide's own pytest refuses)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | {"PYTHONPATH": str(copy / "workflow")}
    for command in document_commands(page):
        check_command(command, copy, env)


def test_audit_config_writes_what_the_audit_guide_shows(audit_run):
    """The audit guide's table of the config file's outputs names these; the run
    (shared with tests/test_audit.py, which checks their contents) wrote each."""
    text = (DOCS / "guides" / "audit-your-model.md").read_text()
    for name in (
        "audit/leakage_rates.md",
        "audit/dataset_inference.md",
        "leakage/my-corpus/report.md",
        "aggregate/mbpp-audit-fm/functional/report.md",
    ):
        assert f"results/audit/{name}" in text and (audit_run / name).is_file(), name


def test_readme_report_command_builds_the_report_with_every_caption(micro_run):
    """The README's report command, on the finished micro run: a report
    that holds every figure and table the rules mark, each with its caption."""
    workdir, _ = micro_run
    (command,) = checked_by("report of the micro run")
    _, argv = how_to_check(command)
    result = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    report = workdir / shlex.split(command)[shlex.split(command).index("--report") + 1]
    html = report.read_text(errors="replace")
    for caption in sorted((REPO / "report").glob("*.rst")):
        if caption.name == "dose.rst":  # the exposure-dose experiment's, not in the micro run
            continue
        first_words = " ".join(caption.read_text().split()[:6])
        assert first_words in html or first_words.replace("``", "") in html, f"{caption.name} missing from the report"
    # the report opens on the verdict: its category sorts first in the menu (localeCompare), and holds verdict.md
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", html, re.DOTALL).group(1))
    first = sorted(categories, key=str.casefold)[0]
    assert first == "1. Verdict (start here)", sorted(categories)
    assert [Path(p).name for files in categories[first].values() for p in files] == ["verdict.md"]
    assert "Start with the category" in html  # the front text says where to look


def experiment_files() -> list[str]:
    """Every experiment file (a README command that dry-runs one whole shares its plan)."""
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "config" / "experiments").glob("*.yaml"))


def planned_jobs(dry_run_output: str) -> set[str]:
    table = dry_run_output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.MULTILINE)}


def functional_memorization_plan(output: str) -> None:
    """The paper's setup: the corpus sample (online: it streams the hub), each
    OLMo revision fetched into a directory of its own, one generation job
    that reads both offline, with no testbed split behind it, every
    similarity family (the judges and App. B's filter under the judge model)
    and the functional tables."""
    assert planned_jobs(output) == {
        "counterfactual_corpus_functions",
        "fetch_hub_model",
        "counterfactual",
        "counterfactual_structural",
        "counterfactual_execution",
        "counterfactual_judges",
        "counterfactual_llm_filter",
        "counterfactual_aggregate",
        "model_identity",
        "verdict",
        "all",
    }
    commands = re.findall(r"^Shell command: (.*)$", output, re.MULTILINE)
    fetches = sorted(c for c in commands if "fetch-model" in c)
    assert [re.search(r"--revision (\S+)", c).group(1) for c in fetches] == [
        "stage1-step656000",
        "stage2-ingredient1-step23842",
    ]
    (sampling,) = [c for c in commands if "sample-corpus-functions" in c]
    assert "HF_HUB_OFFLINE" not in sampling and '"kind": "huggingface"' in sampling and '"n": 100000' in sampling
    (generation,) = [c for c in commands if " counterfactual " in c]
    assert generation.startswith("HF_HUB_OFFLINE=1") and "--samples" not in generation
    assert "--functions results/functional-memorization/counterfactual/cranecode/functions.parquet" in generation
    target, reference = generation.split("--reference")
    assert '"path": "resources/hub/allenai--Olmo-3-1125-32B@stage2-ingredient1-step23842"' in target
    assert '"path": "resources/hub/allenai--Olmo-3-1125-32B@stage1-step656000"' in reference


PLANS = {"config/experiments/functional-memorization.yaml": functional_memorization_plan}


def dry_run(copy: Path, *configfiles: str) -> subprocess.CompletedProcess:
    """``snakemake -n -p`` of the config files laid over the default, in the fresh copy."""
    return subprocess.run(
        [".venv/bin/snakemake", "--cores", "2", "--configfile", *configfiles, "--dry-run", "-p"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("experiment", experiment_files())
def test_every_experiment_file_plans_from_the_repository_root(experiment, plan):
    result = plan(experiment)
    assert result.returncode == 0, f"{experiment}:\n{(result.stdout + result.stderr)[-3000:]}"
    if experiment in PLANS:  # an experiment whose plan is checked, not only that it plans
        PLANS[experiment](result.stdout)


def test_a_null_entry_in_an_experiment_file_removes_the_default_entry(copy):
    overlay = copy / "drop-a-scan.yaml"
    overlay.write_text("leakage:\n  scans:\n    stdlib: null\nscore:\n  methods:\n    neighbor: null\n")
    result = dry_run(copy, "config/micro.yaml", str(overlay))
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "leakage/stdlib/" not in result.stdout and "leakage/training-mix/" in result.stdout
    assert '"neighbor": {' not in result.stdout and '"recall": {' in result.stdout  # the detectors' settings


def test_rq3_on_a_scan_the_config_does_not_have_is_a_clear_error(copy):
    overlay = copy / "rq3-on-a-missing-scan.yaml"
    overlay.write_text("leakage:\n  rq3:\n    scan: no-such-scan\n")
    result = dry_run(copy, "config/micro.yaml", str(overlay))
    assert result.returncode != 0
    assert "leakage.rq3.scan: no scan named 'no-such-scan' under leakage.scans" in result.stdout + result.stderr
