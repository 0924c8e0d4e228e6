"""The scan's identifier-normalised candidate channel (leakage/renamed.py):
candidate recall per clone type on the scan itself, and its speed cost. It
runs the ingest and index stage jobs themselves, and the shard's whole scan
pass, because what it measures is what the whole scan finds and costs.

Plants, in a corpus directory beside standard-library files, one copy of
every HumanEval solution per clone type (CodeSnitch's mutations,
leaktrace/mutate/): T1 (reformatted), T2 (every name renamed at random, the
function's own name too), T3 at 0.9, 0.7 and 0.5 (statements rewritten,
names kept), and runs the scan (index, one shard, gather) on it with the
raw channel alone and with both channels, on the default preset otherwise.
The benchmark is HumanEval as released (long docstrings, which survive a
renaming) and, with ``--short``, HumanEval with its docstrings removed: short
functions, as MBPP's are, where a renaming changes most shingles.
Prints side by side, per clone type: the share of planted copies that are
an LSH candidate of their own sample (candidate recall) and the share the
verifier then calls a duplicate; the candidates and duplicates among the
standard-library units (no copy was planted there: what the extra channel
costs the verifier); and the wall time of the shard job and of the
signature + query step alone. Copies whose mutation did not apply (a
function with nothing to rename) are left out and counted.

    .venv/bin/python benchmarks/renamed_channel.py [--stdlib-files 1500] [--seed 0] [--short]
"""

from __future__ import annotations

import argparse
import ast
import io
import random
import re
import tempfile
import time
import tokenize
from collections import Counter
from pathlib import Path

import numpy as np

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.benchmarks import BENCHMARK_SCHEMA
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.leakage.lsh import BandIndex
from leaktrace.leakage.minhash import Signer
from leaktrace.leakage.renamed import normalised_shingle_hashes
from leaktrace.leakage.scan import scan_documents
from leaktrace.leakage.settings import resolve, scan_slice
from leaktrace.leakage.sources import iter_source
from leaktrace.mutate.registry import Mutation, apply_mutation
from leaktrace.sandbox import SandboxLimits
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index

KINDS = ("T1", "T2", "T3-0.9", "T3-0.7", "T3-0.5")


def _rename_function(code: str, old: str, new: str) -> str:
    """``old`` replaced by ``new`` wherever it is a name token."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        out.append((tok.type, new if tok.type == tokenize.NAME and tok.string == old else tok.string))
    return tokenize.untokenize(out)


def without_docstring(code: str, entry_point: str) -> str:
    """``code`` with the entry point's docstring lines removed (formatting kept elsewhere)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point and ast.get_docstring(node) is not None:
            first = node.body[0]
            lines = code.splitlines(keepends=True)
            body = lines[: first.lineno - 1] + lines[first.end_lineno :]
            if len(node.body) == 1:  # a function that is only its docstring keeps a body
                body.insert(first.lineno - 1, " " * first.col_offset + "pass\n")
            return "".join(body)
    return code


def plant(samples: list[dict], root: Path, seed: int) -> tuple[dict[str, int], Counter]:
    """One file per sample and clone type under root/planted/<kind>/; returns
    the planted counts and the mutations that did not apply."""
    planted, skipped = Counter(), Counter()
    for k, sample in enumerate(samples):
        for kind in KINDS:
            rng = random.Random(f"{seed}-{k}-{kind}")
            mutation = Mutation.parse("T2b" if kind == "T2" else kind)
            mutated = apply_mutation(mutation, sample["code"], "python", sample["entry_point"], rng)
            text = mutated.text
            if kind == "T2":
                text = _rename_function(text, sample["entry_point"], f"fn_{rng.randrange(10**6)}")
            if not mutated.reached or text == sample["code"]:
                skipped[kind] += 1
                continue
            path = root / "planted" / kind / f"{k}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            planted[kind] += 1
    return planted, skipped


def scan(bench: Path, corpus: Path, work: Path, renamed: bool) -> tuple[list[dict], float]:
    """The benchmark indexed, then the corpus scanned in one shard (timed: the library's scan of its documents)."""
    settings = scan_slice({"corpus": {"kind": "files", "root": str(corpus), "glob": "**/*.py"}, "renamed": renamed})
    build_index("s", (bench,), settings, work / "index.parquet")
    s, skips = resolve("s", settings), Counter()
    start = time.perf_counter()
    index, samples = read_records(work / "index.parquet"), read_records(bench)
    documents = iter_source(dict(settings.corpus), 0, 1, [], skips, max_bytes=s.max_bytes, huge=s.huge)
    found = scan_documents(s, index, samples, documents, 0, skips, SandboxLimits())
    seconds = time.perf_counter() - start
    return [{k: p[k] for k in ("sample_id", "location", "duplicate")} for p in found.pairs], seconds


def channel_seconds(texts: list[str], bench: list[str], renamed: bool) -> float:
    """Signatures and queries of ``texts`` against the benchmark, one channel or both."""
    s = resolve("default", scan_slice({"corpus": {"kind": "files", "root": "."}}))
    signer = Signer(s.minhash)
    index = BandIndex(s.bands, s.rows)
    index.insert(list(range(len(bench))), signer.signatures([signer.shingle_hashes(t)[1] for t in bench]))
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        chunk = texts[i : i + 256]
        index.query(signer.signatures([signer.shingle_hashes(t)[1] for t in chunk]))
        if renamed:
            index.query(signer.signatures([normalised_shingle_hashes(signer, t, "python")[1] for t in chunk]))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-files", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--short", action="store_true", help="HumanEval's functions without their docstrings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ingest_benchmark("humaneval", BenchmarkEntry(format="humaneval"), work / "humaneval.parquet")
        samples = read_records(work / "humaneval.parquet")
        if args.short:
            samples = [{**s, "code": without_docstring(s["code"], s["entry_point"])} for s in samples]
            write_table(samples, BENCHMARK_SCHEMA, work / "humaneval.parquet")
        corpus = work / "corpus"
        planted, skipped = plant(samples, corpus, args.seed)
        stdlib = [d for d in iter_stdlib_code()][: args.stdlib_files]
        for k, doc in enumerate(stdlib):
            path = corpus / "stdlib" / f"{k}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(doc.text)
        index = {s["sample_id"]: k for k, s in enumerate(samples)}
        results = {}
        for renamed in (False, True):
            pairs, seconds = scan(work / "humaneval.parquet", corpus, work, renamed)
            found, dups, other = set(), set(), Counter()
            for p in pairs:
                match = re.search(r"planted/([^/]+)/(\d+)\.py", p["location"])
                if match is None:
                    other["candidates"] += 1
                    other["duplicates"] += bool(p["duplicate"])
                elif int(match.group(2)) == index[p["sample_id"]]:  # a unit of the copy of its own sample
                    found.add(match.groups())
                    if p["duplicate"]:
                        dups.add(match.groups())
            results[renamed] = (Counter(k for k, _ in found), Counter(k for k, _ in dups), other, seconds)
        texts = [d.text for d in stdlib]
        bench = [s["code"] for s in samples]
        timing = {renamed: channel_seconds(texts, bench, renamed) for renamed in (False, True)}
    print(
        f"HumanEval's {len(samples)} solutions{' without docstrings' if args.short else ''} planted per clone type beside {len(stdlib)} standard-library files "
        f"(mutations that did not apply, left out: {dict(skipped) or 'none'})\n"
    )
    print(f"{'clone type':<10} {'planted':>7} | {'candidate recall':^23} | {'duplicate recall':^23}")
    print(f"{'':<10} {'':>7} | {'raw':>10} {'raw+renamed':>12} | {'raw':>10} {'raw+renamed':>12}")
    for kind in KINDS:
        n = planted[kind]
        raw, both = results[False], results[True]
        print(
            f"{kind:<10} {n:>7} | {raw[0][kind] / n:>10.3f} {both[0][kind] / n:>12.3f} | "
            f"{raw[1][kind] / n:>10.3f} {both[1][kind] / n:>12.3f}"
        )
    print()
    for renamed, label in ((False, "raw"), (True, "raw+renamed")):
        found, dups, other, seconds = results[renamed]
        print(
            f"{label:<12} stdlib candidates {other['candidates']:>6}, stdlib duplicates {other['duplicates']:>4}, "
            f"shard job {seconds:7.1f} s, signatures + queries alone {timing[renamed]:6.2f} s"
        )
    print(
        f"\ncost of the renamed channel: shard job x{results[True][3] / results[False][3]:.2f}, "
        f"signatures + queries x{timing[True] / timing[False]:.2f}"
    )


if __name__ == "__main__":
    np.seterr(over="ignore")
    main()
