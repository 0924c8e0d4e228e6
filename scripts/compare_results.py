"""Every Parquet file of two result trees, compared byte for byte: the SLURM
run against a local run of the same config (scripts/slurm-proof.sh).

    python scripts/compare_results.py results-a/micro results-b/micro

Exits 1 when a file differs or exists on one side only."""

from __future__ import annotations

import sys
from pathlib import Path


def parquet_files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*.parquet")}


def compare(a: Path, b: Path) -> list[str]:
    """One line per difference (empty: the trees' Parquet files are equal)."""
    left, right = parquet_files(a), parquet_files(b)
    problems = [f"only in {a}: {p}" for p in sorted(left - right)] + [f"only in {b}: {p}" for p in sorted(right - left)]
    problems += [f"differs: {p}" for p in sorted(left & right) if (a / p).read_bytes() != (b / p).read_bytes()]
    if not left:
        problems.append(f"no Parquet file under {a}")
    return problems


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    problems = compare(a, b)
    print("\n".join(problems) or f"{len(parquet_files(a))} Parquet files, all equal byte for byte")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
