"""Each shard job of a leakage scan, measured, and the scan's cost model.

Reads a finished run's per-job records: Snakemake's ``benchmark:`` file of
each ``leakage_scan`` job (``results/<run>/benchmarks/leakage_scan/<scan>-<part>.tsv``:
wall seconds ``s``, ``cpu_time``, ``max_rss``), what each job read (its
documents and the MB of their text, counted by streaming the scan's own
parts of the corpus again with ``leaktrace.leakage.sources.iter_source``; the
scan's corpus as ``--configfile`` names it) and, with
``--sacct``, SLURM's accounting of the same jobs (``sacct``: the whole SLURM
job's TotalCPU, Elapsed and MaxRSS, Snakemake's start inside the allocation
included). Prints one row a job and the totals, then the cost model: CPU
seconds per MB over all the jobs, and the CPU core-hours a TB of source
would take at that rate (1 TB = 10^6 MB), with the command that printed it.

Snakemake samples a job's processes (psutil) every second for its first 30
samples and every 30 s after, so ``cpu_time`` and ``max_rss`` are the last
and the largest sample: ``cpu_time`` can fall short by the CPU of the last
interval. ``sacct``'s TotalCPU is the kernel's count at the job's end.

    .venv/bin/python scripts/scan_cluster_table.py results/python-corpus --scan python-corpus --configfile config/experiments/python-corpus.yaml
    .venv/bin/python scripts/scan_cluster_table.py results/python-corpus-slurm --scan python-corpus --configfile config/experiments/python-corpus.yaml --sacct
    (--bytes PART=FILES,BYTES ...: what each part read, when the corpus is not at hand)
"""

from __future__ import annotations

import argparse
import csv
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

MB = 1e6
TB_IN_MB = 1e6


def read_benchmark(path: Path) -> dict:
    """A Snakemake benchmark file's first row (a job's one measurement), numbers as floats (NA: None)."""
    with path.open(newline="") as fh:
        row = next(csv.DictReader(fh, delimiter="\t"))
    out = {}
    for key, value in row.items():
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            out[key] = None if value in ("NA", "", None) else value
    return out


def job_records(run_dir: Path, scan: str) -> dict[int, dict]:
    """``part -> benchmark record`` of the scan's ``leakage_scan`` jobs."""
    records = {}
    for path in (run_dir / "benchmarks" / "leakage_scan").glob(f"{scan}-*.tsv"):
        part = path.stem[len(scan) + 1 :]
        if part.isdigit():
            records[int(part)] = read_benchmark(path)
    if not records:
        raise SystemExit(
            f"no benchmark record of a leakage_scan job of {scan!r} under {run_dir}/benchmarks/leakage_scan"
        )
    return records


def scan_settings(configfile: Path, scan: str) -> dict:
    """The scan as the config file that ran it names it (an overlay with the
    whole ``leakage.scans.<scan>`` entry; the schema's defaults filled in for
    what the scan's reader needs)."""
    import yaml

    entry = yaml.safe_load(configfile.read_text())["leakage"]["scans"][scan]
    corpus = {"content": "content", "id": None, "location": None, "follow_links": False, **entry["corpus"]}
    return {**entry, "corpus": corpus, "preset": entry.get("preset", "default")}


def part_sizes(source: dict, parts: int) -> dict[int, tuple[int, int]]:
    """``part -> (documents, bytes of text)`` each job of the scan reads, by the scan's own sharding."""
    from leaktrace.leakage.sources import iter_source

    sizes = {}
    for part in range(parts):
        docs = size = 0
        for doc in iter_source(source, part, parts, [], Counter()):
            docs += 1
            size += (
                len(doc.data.encode("utf-8"))
                if isinstance(doc.data, str)
                else len(doc.data)
                if isinstance(doc.data, bytes)
                else 0
            )
        sizes[part] = (docs, size)
    return sizes


def sacct_records(scan: str) -> dict[int, dict]:
    """``part -> {total_cpu, elapsed, max_rss}`` from SLURM's accounting (the
    job's comment names its rule and wildcards); empty where sacct does not answer."""
    try:
        out = subprocess.run(
            ["sacct", "-n", "-P", "-a", "-S", "2000-01-01", "-o", "JobID,Comment,TotalCPU,Elapsed,MaxRSS,State"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"sacct: {getattr(err, 'stderr', err)}".strip(), file=sys.stderr)
        return {}
    return parse_sacct(out, scan)


def _seconds(value: str) -> float | None:
    """SLURM's [D-]HH:MM:SS[.mmm] or MM:SS.mmm as seconds."""
    if not value:
        return None
    days, _, rest = value.rpartition("-")
    fields = [float(x) for x in rest.split(":")]
    while len(fields) < 3:
        fields.insert(0, 0.0)
    return (float(days) if days else 0.0) * 86400 + fields[0] * 3600 + fields[1] * 60 + fields[2]


def _megabytes(value: str) -> float | None:
    if not value:
        return None
    unit = value[-1].upper()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(unit)
    return (float(value[:-1]) * scale if scale else float(value)) / 1024**2


def parse_sacct(text: str, scan: str) -> dict[int, dict]:
    """sacct -P rows of JobID|Comment|TotalCPU|Elapsed|MaxRSS|State: the job row
    gives the part (its comment) and the TotalCPU; the largest MaxRSS of its steps counts.
    The last completed job of a part counts (a retried one is listed twice)."""
    marker = f"rule_leakage_scan_wildcards_{scan}_"
    jobs: dict[str, int] = {}
    records: dict[int, dict] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 6:
            continue
        job_id, comment, total_cpu, elapsed, max_rss, state = fields[:6]
        base = job_id.split(".")[0]
        if "." not in job_id:
            if comment.startswith(marker) and comment[len(marker) :].isdigit() and state.startswith("COMPLETED"):
                part = int(comment[len(marker) :])
                jobs[base] = part
                records[part] = {
                    "job": base,
                    "total_cpu": _seconds(total_cpu),
                    "elapsed": _seconds(elapsed),
                    "max_rss": _megabytes(max_rss),
                }
        elif base in jobs and max_rss:
            rec = records[jobs[base]]
            rss = _megabytes(max_rss)
            rec["max_rss"] = max(rec["max_rss"] or 0, rss or 0) or None
    return records


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def table(
    records: dict[int, dict], sizes: dict[int, tuple[int, int]], sacct: dict[int, dict]
) -> tuple[list[str], dict]:
    """The Markdown table's lines, and the totals."""
    head = ["part", "files", "MB", "CPU s", "wall s", "files per CPU s", "MB per CPU s", "peak RSS MB"]
    if sacct:
        head += ["SLURM job", "SLURM CPU s", "SLURM wall s", "SLURM MaxRSS MB"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---:" for _ in head) + " |"]
    tot = Counter()
    for part in sorted(records):
        rec = records[part]
        files, size = sizes.get(part, (None, None))
        cpu, wall, rss = rec.get("cpu_time"), rec.get("s"), rec.get("max_rss")
        mb = size / MB if size is not None else None
        row = [
            str(part),
            _fmt(files, 0),
            _fmt(mb),
            _fmt(cpu),
            _fmt(wall),
            _fmt(files / cpu if files is not None and cpu else None, 0),
            _fmt(mb / cpu if mb is not None and cpu else None, 2),
            _fmt(rss, 0),
        ]
        if sacct:
            s = sacct.get(part, {})
            row += [s.get("job", "-"), _fmt(s.get("total_cpu")), _fmt(s.get("elapsed"), 0), _fmt(s.get("max_rss"), 0)]
            tot["slurm_cpu"] += s.get("total_cpu") or 0
            tot["slurm_wall"] += s.get("elapsed") or 0
        lines.append("| " + " | ".join(row) + " |")
        tot["jobs"] += 1
        tot["files"] += files or 0
        tot["bytes"] += size or 0
        tot["cpu"] += cpu or 0
        tot["wall"] += wall or 0
        tot["max_rss"] = max(tot["max_rss"], rss or 0)
    mb, cpu = tot["bytes"] / MB, tot["cpu"]
    row = [
        f"all {tot['jobs']}",
        _fmt(tot["files"], 0),
        _fmt(mb),
        _fmt(cpu),
        _fmt(tot["wall"]),
        _fmt(tot["files"] / cpu if cpu else None, 0),
        _fmt(mb / cpu if cpu else None, 2),
        _fmt(tot["max_rss"], 0) + " (most)",
    ]
    if sacct:
        row += ["", _fmt(tot["slurm_cpu"]), _fmt(tot["slurm_wall"], 0), ""]
    lines.append("| " + " | ".join(row) + " |")
    return lines, dict(tot)


def cost_model(tot: dict, preset: str) -> list[str]:
    """CPU s per MB over all the jobs, and core-hours per TB at that rate."""
    mb = tot["bytes"] / MB
    if not mb or not tot["cpu"]:
        return [f"cost model ({preset}): no bytes or no CPU time measured"]
    per_mb = tot["cpu"] / mb
    lines = [
        f"cost model ({preset}): {tot['cpu']:,.1f} CPU s over {mb:,.1f} MB in {tot['jobs']} jobs: "
        f"{per_mb:.3f} CPU s per MB ({mb / tot['cpu']:.2f} MB per CPU second), "
        f"{per_mb * TB_IN_MB / 3600:,.0f} CPU core-hours per TB of source"
    ]
    if tot.get("slurm_cpu"):
        slurm = tot["slurm_cpu"] / mb
        lines.append(
            f"cost model ({preset}, SLURM's TotalCPU, Snakemake's start in each job included): "
            f"{slurm:.3f} CPU s per MB, {slurm * TB_IN_MB / 3600:,.0f} CPU core-hours per TB of source"
        )
    return lines


def parse_bytes(values: list[str]) -> dict[int, tuple[int, int]]:
    sizes = {}
    for value in values:
        part, _, rest = value.partition("=")
        files, _, size = rest.partition(",")
        sizes[int(part)] = (int(files), int(size))
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path, help="results/<run> of a finished run")
    parser.add_argument("--scan", required=True, help="the scan's name (leakage.scans.<name>)")
    parser.add_argument("--configfile", type=Path, default=None, help="the config file that names the scan's corpus")
    parser.add_argument("--sacct", action="store_true", help="add SLURM's accounting of each job (needs slurmdbd)")
    parser.add_argument(
        "--bytes",
        nargs="*",
        default=None,
        metavar="PART=FILES,BYTES",
        help="what each part read, instead of reading the corpus again",
    )
    parser.add_argument("--preset", default=None, help="the scheme's name for the cost line (default: the scan's)")
    args = parser.parse_args(argv)
    records = job_records(args.run_dir, args.scan)
    settings = scan_settings(args.configfile, args.scan) if args.configfile else None
    if args.bytes is not None:
        sizes = parse_bytes(args.bytes)
    elif settings is None:
        raise SystemExit("give --configfile (the config that names the scan's corpus) or --bytes PART=FILES,BYTES ...")
    else:
        sizes = part_sizes(settings["corpus"], settings.get("shards", 1))
    preset = args.preset or (settings or {}).get("preset", "default")
    sacct = sacct_records(args.scan) if args.sacct else {}
    lines, tot = table(records, sizes, sacct)
    print(
        f"$ {' '.join(shlex.quote(a) for a in ['.venv/bin/python', 'scripts/scan_cluster_table.py', *(argv if argv is not None else sys.argv[1:])])}"
    )
    print()
    print("\n".join(lines))
    print()
    print("\n".join(cost_model(tot, preset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
