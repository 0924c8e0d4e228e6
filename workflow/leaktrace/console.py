"""The commands for a person: ``leaktrace audit`` and ``leaktrace scan``.
Each turns its flags into a config overlay (:mod:`leaktrace.overlay`),
checks it as planning would (:mod:`leaktrace.preflight`), writes it to
``results/<run>/config.yaml`` (``snakemake --configfile`` on that file
reproduces the run), runs the pipeline (:mod:`leaktrace.snakemake_run`) and
prints one line per answer from ``results/<run>/verdict.json``.

Exit status: 0 the run completed, whatever it found; 1 Snakemake failed (a
job, or planning Snakemake itself refused); 2 a config error at planning
(nothing ran); 3 a gate the caller asked for (``--fail-on-evidence``,
``--fail-on-copies``) found what it gates on."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from leaktrace.overlay import AuditRequest, Benchmark, Corpus, Model, ScanRequest
from leaktrace.snakemake_run import workflow_root

COMPLETED, FAILED, CONFIG_ERROR, GATE = 0, 1, 2, 3


def _for_repository(value: str, root: Path) -> str:
    """A local path as the run from ``root`` reads it (relative where it is
    inside the repository, else absolute); anything else (a hub id) as given."""
    if not Path(value).exists():
        return value
    path = Path(os.path.abspath(value))  # links kept: a linked folder inside the repository stays inside it
    try:
        return str(path.relative_to(os.path.abspath(root)))
    except ValueError:
        return str(path)


def _shown(path: Path) -> str:
    """A path as the person typing the command would type it."""
    return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)


def _common(parser: argparse.ArgumentParser, corpus_required: bool) -> None:
    parser.add_argument(
        "--benchmark", required=True, help="a benchmark file (jsonl(.gz), json, parquet, csv) or a hub dataset id"
    )
    parser.add_argument(
        "--preset",
        required=True,
        help="its published layout: humaneval, humanevalplus, mbpp, mbpp-sanitized, mbppplus, cruxeval, apps, "
        "classeval, ds1000, swe-bench, ... (config/schema.yaml benchmarks.*.preset)",
    )
    parser.add_argument("--split", default="test", help="a hub dataset's split (default test)")
    parser.add_argument("--limit", type=int, default=None, help="the benchmark's first N samples only")
    parser.add_argument(
        "--corpus",
        required=corpus_required,
        help="a folder of code, or a hub dataset id (streamed; its text column `content`), scanned for copies",
    )
    parser.add_argument("--glob", default="**/*.py", help="the corpus folder's files (default **/*.py)")
    parser.add_argument("--run", default=None, help="the results folder results/RUN/ (default: from the command)")
    parser.add_argument("--cores", type=int, default=1, help="cores Snakemake may use (default 1)")
    parser.add_argument("--dry-run", action="store_true", help="print Snakemake's plan; run nothing")
    parser.add_argument("--json", action="store_true", help="print verdict.json instead of one line per answer")
    parser.add_argument("--fail-on-copies", action="store_true", help="exit 3 where a scan finds a copy")


def audit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME=PATH_OR_HUB_ID",
        help="a model to audit: a local directory or a hub id; repeat for more",
    )
    parser.add_argument(
        "--controls", required=True, help="the control ids, one a line: samples the models cannot have seen"
    )
    parser.add_argument(
        "--negative-control",
        action="append",
        default=[],
        metavar="NAME",
        help="a --model declared unexposed to suspects and controls alike; repeat for more",
    )
    _common(parser, corpus_required=False)
    parser.add_argument(
        "--fail-on-evidence",
        action="store_true",
        help="exit 3 where an answer is evidence of exposure or an observational finding",
    )


def scan_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser, corpus_required=True)


def _benchmark(a: argparse.Namespace, root: Path) -> Benchmark:
    return Benchmark(_for_repository(a.benchmark, root), a.preset, a.limit, a.split)


def _corpus(a: argparse.Namespace, root: Path) -> Corpus | None:
    return Corpus(_for_repository(a.corpus, root), a.glob) if a.corpus else None


def audit_request(a: argparse.Namespace, root: Path) -> AuditRequest:
    benchmark = _benchmark(a, root)
    models = [Model.parse(m) for m in a.model]
    return AuditRequest(
        run=a.run or f"audit-{benchmark.name}",
        models=tuple(Model(m.name, _for_repository(m.path, root)) for m in models),
        benchmark=benchmark,
        controls=_for_repository(a.controls, root),
        negative_controls=tuple(a.negative_control),
        corpus=_corpus(a, root),
    )


def scan_request(a: argparse.Namespace, root: Path) -> ScanRequest:
    benchmark = _benchmark(a, root)
    return ScanRequest(run=a.run or f"scan-{benchmark.name}", benchmark=benchmark, corpus=_corpus(a, root))


def write_config(overlay: dict, command: list[str], path: Path, root: Path) -> None:
    """The overlay as a ``--configfile``, headed by the command that wrote it."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Written by: {shlex.join(command)}\n"
        f"# Reproduce from the repository root: snakemake --cores all --configfile {os.path.relpath(path, root)}\n"
    )
    path.write_text(header + yaml.safe_dump(overlay, sort_keys=False))


def answer_lines(record: dict, results: Path) -> list[str]:
    """One line per model x benchmark (tier, the test it rests on, the page)
    and per scan (its copies by kind, its report and cleaned benchmark)."""
    page = _shown(results / "verdict.md")
    lines = []
    for a in record["answers"]:
        test = next((t for t in a["tests"] if t["name"] == a["carried_by"]), None)
        carried = "no test named" if test is None else a["carried_by"]
        if test is not None and test["p_value"] is not None:
            carried += f", p = {test['p_value']:.2g}"
        lines.append(f"{a['model']} × {a['benchmark']}: {a['tier']} ({carried}); {page}")
    for s in record["scans"]:
        kinds = ", ".join(f"{k} {v}" for k, v in s["copies"].items())
        lines.append(
            f"scan {s['scan']} × {s['benchmark']}: {s['total']} copies ({kinds}); "
            f"{_shown(results / s['report'])}, cleaned benchmark {_shown(results / 'leakage' / s['scan'] / 'clean.parquet')}"
        )
    return lines


def gate(record: dict, on_evidence: bool, on_copies: bool) -> bool:
    """Whether a requested gate found what it gates on."""
    from leaktrace.report.verdict_json import FINDINGS

    evidence = on_evidence and any(a["tier"] in FINDINGS for a in record["answers"])
    return evidence or (on_copies and any(s["total"] for s in record["scans"]))


def execute(request: AuditRequest | ScanRequest, a: argparse.Namespace, command: list[str], root: Path) -> int:
    """Check, write, run, print; the exit status. Every stage command builds
    the parser that lists these commands, so what only a run needs (Snakemake,
    the planning checks) is imported here, when one starts."""
    from leaktrace import snakemake_run
    from leaktrace.preflight import check_overlay

    overlay = request.overlay()
    try:
        check_overlay(overlay, root, fetching=not a.dry_run)
    except ValueError as err:
        print(f"leaktrace {command[1]}: {err}", file=sys.stderr)
        return CONFIG_ERROR
    results = root / "results" / request.run
    configfile = results / "config.yaml"
    write_config(overlay, command, configfile, root)
    if not snakemake_run.run_pipeline(snakemake_run.RunSettings(root, configfile, a.cores, a.dry_run)):
        print(
            f"leaktrace {command[1]}: the run failed (Snakemake's message above); its config: {_shown(configfile)}",
            file=sys.stderr,
        )
        return FAILED
    if a.dry_run:
        print(f"Dry run: nothing ran. The config it planned: {_shown(configfile)}")
        return COMPLETED
    record = json.loads((results / "verdict.json").read_text())
    print(json.dumps(record, indent=1, ensure_ascii=False) if a.json else "\n".join(answer_lines(record, results)))
    return GATE if gate(record, getattr(a, "fail_on_evidence", False), a.fail_on_copies) else COMPLETED


def audit(a: argparse.Namespace) -> int:
    root = workflow_root()
    try:
        request = audit_request(a, root)
    except ValueError as err:
        print(f"leaktrace audit: {err}", file=sys.stderr)
        return CONFIG_ERROR
    return execute(request, a, ["leaktrace", "audit", *a.argv], root)


def scan(a: argparse.Namespace) -> int:
    root = workflow_root()
    return execute(scan_request(a, root), a, ["leaktrace", "scan", *a.argv], root)


# name -> (arguments, run, one line for `leaktrace --help`)
PERSON_COMMANDS = {
    "audit": (audit_arguments, audit, "audit models for exposure to a benchmark, and print the answers"),
    "scan": (scan_arguments, scan, "scan a corpus for copies of a benchmark (the decontamination pre-flight)"),
}
