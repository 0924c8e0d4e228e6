"""Every Parquet file and every saved LoRA adapter of two result trees,
compared byte for byte: the SLURM run against a local run of the same config
(scripts/slurm-proof.sh).

    python scripts/compare_results.py results-a/micro results-b/micro

Exits 1 when a file differs or exists on one side only."""

from __future__ import annotations

import sys
from pathlib import Path

PATTERNS = {"Parquet files": "*.parquet", "adapters": "adapter_model.safetensors"}


def result_files(root: Path) -> dict[str, set[Path]]:
    return {kind: {p.relative_to(root) for p in root.rglob(pattern)} for kind, pattern in PATTERNS.items()}


def compare(a: Path, b: Path) -> list[str]:
    """One line per difference (empty: the trees' files are equal)."""
    problems = []
    for kind, left in result_files(a).items():
        right = result_files(b)[kind]
        problems += [f"only in {a}: {p}" for p in sorted(left - right)] + [
            f"only in {b}: {p}" for p in sorted(right - left)
        ]
        problems += [f"differs: {p}" for p in sorted(left & right) if (a / p).read_bytes() != (b / p).read_bytes()]
    if not result_files(a)["Parquet files"]:
        problems.append(f"no Parquet file under {a}")
    return problems


def summary(root: Path) -> str:
    counts = {kind: len(files) for kind, files in result_files(root).items()}
    return " and ".join(f"{n} {kind}" for kind, n in counts.items() if n) + ", all equal byte for byte"


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    problems = compare(a, b)
    print("\n".join(problems) or summary(a))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
