"""A committed release on disk, as ``publish`` writes it: the published
file (``published.jsonl``), the commitment (``commitment.json``) and, kept
private, the forms table (``private/forms.parquet``) and the secret
(``private/secret.key``); and the release read back checked: the secret,
the forms table and the published file must be those committed to, and each
published record the form the secret chooses."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from leaktrace.artifacts import read_records
from leaktrace.data.benchmarks import benchmark_entry, benchmark_records
from leaktrace.errors import InputError
from leaktrace.watermark.choice import choose, read_secret
from leaktrace.watermark.commitment import check_commitment, read_commitment

PUBLISHED, COMMITMENT, PRIVATE = "published.jsonl", "commitment.json", "private"
FORMS, SECRET = "forms.parquet", "secret.key"


def private_dir(out_dir: Path) -> Path:
    """Where a release keeps what it does not publish (the forms table, the secret, the tests' outputs)."""
    return out_dir / PRIVATE


def forms_by_problem(rows: list[dict]) -> dict[str, list[dict]]:
    """problem id -> its forms in form order."""
    forms: dict[str, list[dict]] = defaultdict(list)
    for row in sorted((r for r in rows if r["form"] is not None), key=lambda r: r["form"]):
        forms[row["problem_id"]].append(row)
    return forms


def checked_release(
    out_dir: Path, *, published: Path | None = None, commitment: Path | None = None, seed_file: Path | None = None
) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """(problem id -> forms, problem id -> published form) of a committed
    release, after checking that the secret, the forms table and the
    published file are those committed to and that each published record
    holds the form the secret chooses."""
    published = published or out_dir / PUBLISHED
    commitment_path = commitment or out_dir / COMMITMENT
    secret_file = seed_file or private_dir(out_dir) / SECRET
    forms_path = private_dir(out_dir) / FORMS
    committed = read_commitment(commitment_path)
    secret = read_secret(secret_file)
    check_commitment(
        committed, commitment_path, secret=secret, secret_file=secret_file, forms=forms_path, published=published
    )
    forms = forms_by_problem(read_records(forms_path))
    chosen = {pid: choose(secret, pid, len(own)) for pid, own in forms.items()}
    released = {
        s.task_id: s.code
        for _, s in benchmark_records(
            benchmark_entry({**committed["layout"], "path": str(published)}, "the commitment's layout"), "release"
        )
    }
    if set(released) != set(forms):
        raise InputError(
            str(published),
            None,
            f"holds problems {sorted(set(released) ^ set(forms))[:5]} that the forms table does not (or the reverse)",
        )
    for pid, code in released.items():
        if code != forms[pid][chosen[pid]]["text"]:
            raise InputError(str(published), pid, "is not the form the secret chooses")
    return forms, chosen
