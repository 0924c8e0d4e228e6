"""Recall of the leakage scan by kind of copy, and its precision on a corpus
where nothing was planted.

The benchmark: the HumanEval problems that have a hand-written other solution
(resources/verify/alternatives.jsonl, 36), and the same solutions with two
module-level lines before them (MBPP/1's ``R = 3``, ``C = 3``), as a second
benchmark of the same scan. One copy of each sample per kind is planted
under planted/<kind>/ beside standard-library files (the corpus the
pipeline's ``stdlib`` scan reads), and the scan runs on the default preset
(index, one shard, gather). It runs the stage jobs themselves, because what
it measures is what the whole scan finds. Kinds:

- ``verbatim``: the solution as a file; ``module-lines``: the second
  benchmark's solution (module lines and function) as a file;
- ``renamed``: every name renamed at random, the function's own too
  (CodeSnitch's T2b, leaktrace/mutate); ``reformatted``: T1;
- ``embedded``: the solution as a method in the middle of a long class made
  of a standard-library file; ``re-wrapped``: the solution hard-wrapped at 24
  columns (tokens cut too) in the middle of a standard-library file saved as
  Markdown;
- ``statement-only``: the problem's prompt (signature and docstring) over the
  other solution, as a Markdown page with the prompt as text and the other
  solution in a code block;
- ``rephrased``: docstring dropped, T2b then T3-0.5 (statements rewritten): a
  mechanical stand-in for an LLM's rewording;
- ``translated``: the solution written by hand in JavaScript (8 problems, below),
  no problem text.

A planted copy is found when the scan calls a unit of its file a duplicate
(code or input leak) of its own sample (a ``module-lines`` copy: of the
second benchmark's sample, module lines included; the others: of
HumanEval's). A duplicate pair is right when it pairs a planted copy with
its problem, in either benchmark. Printed: per
kind, planted, found, recall, and how (channel, clone type or input leak);
the recall of the MinHash channels alone (the containment and problem-text
channels off) side by side; then the duplicates among the unplanted
standard-library files (false positives) and the precision of all
duplicate pairs.

Then the rephrase channel (leakage/rephrase.py) on the same corpus with the
model-free stand-in embedder (no judge is available offline, so its
candidates stay unverified): for rephrased and translated, the share of
planted copies whose own sample has the copy's unit among its k nearest
units (candidate recall@k, k = 1, 3, 10; units the other channels already
call duplicates of the sample left out, as the stage does), how many top-k
places unplanted standard-library units take and from how many files, and
the stand-in's seconds per 1,000 benchmark samples and per 1,000 corpus units
on this CPU.

    .venv/bin/python benchmarks/scan_kinds.py [--stdlib-files 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import tempfile
import textwrap
import time
import tokenize
from collections import Counter, defaultdict
from pathlib import Path

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.benchmarks import BENCHMARK_SCHEMA
from leaktrace.data.corpora import iter_stdlib_code
from leaktrace.leakage.devset import ALTERNATIVES, STDLIB_EXCLUDE, strip_docstrings
from leaktrace.leakage.rephrase import TfidfEmbedder
from leaktrace.leakage.settings import scan_slice
from leaktrace.leakage.units import language_of, split_units
from leaktrace.mutate.registry import Mutation, apply_mutation
from leaktrace.settings.ingest import BenchmarkEntry
from leaktrace.stages.ingest import ingest_benchmark
from leaktrace.stages.leakage import build_index, gather, scan_shard
from leaktrace.stages.leakage_rephrase import rephrase_shard

KINDS = (
    "verbatim",
    "module-lines",
    "renamed",
    "reformatted",
    "embedded",
    "re-wrapped",
    "statement-only",
    "rephrased",
    "translated",
)
MODULE_LINES = "R = 3\nC = 3\n"
# HumanEval solutions translated to JavaScript by hand for this benchmark (no problem text)
TRANSLATED = {
    "HumanEval/0": "function hasCloseElements(numbers, threshold) {\n  for (let i = 0; i < numbers.length; i++) {\n"
    "    for (let j = 0; j < numbers.length; j++) {\n      if (i !== j) {\n"
    "        const distance = Math.abs(numbers[i] - numbers[j]);\n        if (distance < threshold) {\n"
    "          return true;\n        }\n      }\n    }\n  }\n  return false;\n}\n",
    "HumanEval/2": "function truncateNumber(number) {\n  return number % 1.0;\n}\n",
    "HumanEval/4": "function meanAbsoluteDeviation(numbers) {\n  const mean = numbers.reduce((a, b) => a + b, 0) / numbers.length;\n"
    "  return numbers.reduce((a, x) => a + Math.abs(x - mean), 0) / numbers.length;\n}\n",
    "HumanEval/8": "function sumProduct(numbers) {\n  let sumValue = 0;\n  let prodValue = 1;\n  for (const n of numbers) {\n"
    "    sumValue += n;\n    prodValue *= n;\n  }\n  return [sumValue, prodValue];\n}\n",
    "HumanEval/12": "function longest(strings) {\n  if (strings.length === 0) {\n    return null;\n  }\n"
    "  const maxlen = Math.max(...strings.map((x) => x.length));\n  for (const s of strings) {\n"
    "    if (s.length === maxlen) {\n      return s;\n    }\n  }\n}\n",
    "HumanEval/13": "function greatestCommonDivisor(a, b) {\n  while (b) {\n    [a, b] = [b, a % b];\n  }\n  return a;\n}\n",
    "HumanEval/16": "function countDistinctCharacters(string) {\n  return new Set(string.toLowerCase()).size;\n}\n",
    "HumanEval/24": "function largestDivisor(n) {\n  for (let i = n - 1; i > 0; i--) {\n    if (n % i === 0) {\n"
    "      return i;\n    }\n  }\n}\n",
}


def _rename(code: str, old: str, new: str) -> str:
    out = [
        (t.type, new if t.type == tokenize.NAME and t.string == old else t.string)
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
    ]
    return tokenize.untokenize(out)


def _mutate(code: str, entry_point: str, kinds: tuple[str, ...], rng: random.Random) -> str | None:
    for kind in kinds:
        mutated = apply_mutation(Mutation.parse(kind), code, "python", entry_point, rng)
        if not mutated.reached:
            return None
        code = mutated.text
    return code


def _prompt(sample: dict) -> str:
    return sample["prompt"].strip("\n")


def plant(samples: list[dict], alternatives: dict, stdlib: list[str], corpus: Path, seed: int) -> Counter:
    """One file per sample and kind under corpus/planted/<kind>/<k>.<ext>; the planted counts."""
    planted: Counter = Counter()
    long_files = [t for t in stdlib if t.count("\n") >= 300]

    def put(kind: str, k: int, ext: str, text: str | None) -> None:
        if text is None:
            return
        path = corpus / "planted" / kind / f"{k}.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        planted[kind] += 1

    for k, s in enumerate(samples):
        rng = random.Random(f"{seed}-{k}")
        code, entry = s["code"], s["entry_point"]
        host = long_files[k % len(long_files)].splitlines(keepends=True)
        half = len(host) // 2
        put("verbatim", k, "py", code)
        put("module-lines", k, "py", with_module_lines(code))
        renamed = _mutate(code, entry, ("T2b",), rng)
        put("renamed", k, "py", renamed and _rename(renamed, entry, f"fn_{rng.randrange(10**6)}"))
        put("reformatted", k, "py", _mutate(code, entry, ("T1",), rng))
        put(
            "embedded",
            k,
            "py",
            "class Generated:\n"
            + textwrap.indent("".join(host[:half]) + "\n" + code + "\n" + "".join(host[half:]), "    "),
        )
        wrapped = "\n".join(line[i : i + 24] for line in code.splitlines() for i in range(0, max(1, len(line)), 24))
        put("re-wrapped", k, "md", "".join(host[:half]) + "\n" + wrapped + "\n\n" + "".join(host[half:]))
        put(
            "statement-only",
            k,
            "md",
            f"# Exercise {k}\n\n```python\n{_prompt(s)}\n```\n\nAnother way to do it:\n\n"
            f"```python\n{alternatives[s['task_id']]}```\n",
        )
        rephrased = _mutate(strip_docstrings(code), entry, ("T2b", "T3-0.5"), rng)
        put("rephrased", k, "py", rephrased and _rename(rephrased, entry, f"fn_{rng.randrange(10**6)}"))
        put("translated", k, "js", TRANSLATED.get(s["task_id"]))
    return planted


def with_module_lines(code: str) -> str:
    """``code`` with MBPP/1's two module-level lines after its imports."""
    lines = code.splitlines(keepends=True)
    at = max((i + 1 for i, line in enumerate(lines) if line.startswith(("import ", "from "))), default=0)
    return "".join(lines[:at]) + MODULE_LINES + "".join(lines[at:])


def tally(pairs: list[dict], samples: list[dict]) -> tuple[dict, dict, int, list]:
    """(per kind the planted copies found, how each was found, duplicates of their own sample, the other duplicates)."""
    number = {s["sample_id"].split("/", 1)[1]: k for k, s in enumerate(samples)}
    found: dict[str, set] = defaultdict(set)
    how: dict[str, Counter] = defaultdict(Counter)
    false_pos, right = [], 0
    for p in pairs:
        if not p["duplicate"]:
            continue
        match = re.search(r"planted/([^/]+)/(\d+)\.\w+$", p["location"])
        if match is None:
            false_pos.append(p)
            continue
        kind, k = match.group(1), int(match.group(2))
        own = "modlines" if kind == "module-lines" else "humaneval"  # a module-lines copy must be its own sample's
        if number[p["sample_id"].split("/", 1)[1]] != k:
            false_pos.append(p)
            continue
        right += 1  # a copy of the problem, in either benchmark
        if p["sample_id"].split("/", 1)[0] == own and k not in found[kind]:
            found[kind].add(k)
            how[kind][f"{p['channel']}: {p['clone_type'] if p['leak'] == 'code' else 'input leak'}"] += 1
    return found, how, right, false_pos


TOP_K = (1, 3, 10)
REPHRASE_KINDS = ("rephrased", "translated")


def settings_new(corpus: Path) -> dict:
    """The scan's config (as under leakage.scans) of ``corpus``."""
    return {"benchmarks": ["humaneval", "modlines"], "corpus": {"kind": "files", "root": str(corpus), "glob": "**/*"}}


def embedding_cost(samples: list[dict], corpus: Path, repeat: int = 3) -> tuple[float, float, int]:
    """(seconds per 1,000 benchmark samples, per 1,000 corpus units, units timed) of the stand-in
    embedder: fitting and embedding the benchmark side (its samples repeated to 1,000 texts),
    embedding every function-level unit of the corpus in batches of 256; the best of ``repeat``."""
    texts = [s["code"] for s in samples]
    bench = (texts * (1000 // len(texts) + 1))[:1000]
    units, langs = [], []
    for path in sorted(corpus.rglob("*")):
        if path.is_file():
            lang = language_of(str(path), "python")
            for u in split_units(path.read_text(), lang, "function")[0]:
                units.append(u.text)
                langs.append(lang)
    per_bench, per_unit = float("inf"), float("inf")
    for _ in range(repeat):
        embedder = TfidfEmbedder()
        start = time.perf_counter()
        embedder.fit(bench, ["python"] * len(bench))
        embedder.embed(bench, ["python"] * len(bench))
        per_bench = min(per_bench, time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(0, len(units), 256):
            embedder.embed(units[i : i + 256], langs[i : i + 256])
        per_unit = min(per_unit, (time.perf_counter() - start) * 1000 / len(units))
    return per_bench, per_unit, len(units)


def print_rephrase(
    candidates: list[dict], samples: list[dict], planted: Counter, seconds: float, cost: tuple[float, float, int]
) -> None:
    """Candidate recall@k of the rephrase channel for the kinds no other channel finds, and the
    unplanted units in the top k."""
    number = {s["sample_id"]: k for k, s in enumerate(samples)}
    rank_of: dict[tuple[str, int], int] = {}  # (kind, planted copy) -> the rank of its unit among its own sample's
    intruders = {k: [] for k in TOP_K}
    for c in candidates:
        match = re.search(r"planted/([^/]+)/(\d+)\.\w+$", c["location"])
        if "/stdlib/" in c["location"]:
            for k in TOP_K:
                if c["rank"] <= k:
                    intruders[k].append(c["location"])
        if match and c["sample_id"] in number and number[c["sample_id"]] == int(match.group(2)):
            key = (match.group(1), int(match.group(2)))
            rank_of[key] = min(rank_of.get(key, c["rank"]), c["rank"])
    # what ranks above a found copy: other planted copies of its own problem (right answers of another kind) or not
    above: dict[str, Counter] = {kind: Counter() for kind in REPHRASE_KINDS}
    for c in candidates:
        match = re.search(r"planted/([^/]+)/(\d+)\.\w+$", c["location"])
        for kind in REPHRASE_KINDS:
            k = number.get(c["sample_id"])
            if k is None or (kind, k) not in rank_of or c["rank"] >= rank_of[kind, k]:
                continue
            own = match is not None and int(match.group(2)) == k and match.group(1) != kind
            above[kind]["own problem, other kind" if own else "other"] += 1
    per_bench, per_unit, n_units = cost
    print(
        f"\nrephrase channel, stand-in embedder (tfidf), no judge: shard job {seconds:.1f} s; "
        f"{len({c['sample_id'] for c in candidates})} samples with candidates"
    )
    print("| kind | planted | " + " | ".join(f"recall@{k}" for k in TOP_K) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in TOP_K) + " |")
    for kind in REPHRASE_KINDS:
        n = planted[kind]
        hits = [sum(1 for (kd, _), r in rank_of.items() if kd == kind and r <= k) for k in TOP_K]
        print(f"| {kind} | {n} | " + " | ".join(f"{h}/{n} = {h / n if n else float('nan'):.3f}" for h in hits) + " |")
    for kind in REPHRASE_KINDS:
        print(
            f"ranked above a found {kind} copy (its own sample's top 10): "
            + (", ".join(f"{k} {v}" for k, v in sorted(above[kind].items())) or "nothing")
        )
    total = len({s["sample_id"] for s in samples}) * 2  # both benchmarks' samples have a top k
    for k in TOP_K:
        print(
            f"top-{k}: {len(intruders[k])} of {total * k} places held by unplanted standard-library units "
            f"({len(set(intruders[k]))} files)"
        )
    print(
        f"stand-in embedding cost: {per_bench:.2f} s per 1,000 benchmark samples (fit and embed), "
        f"{per_unit:.2f} s per 1,000 corpus units ({n_units} units timed)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-files", type=int, default=300)
    parser.add_argument(
        "--samples", type=int, default=None, help="the first n samples with an other solution (all: 36)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    alternatives = {r["task_id"]: r["code"] for r in map(json.loads, ALTERNATIVES.read_text().splitlines()) if r}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ingest_benchmark("humaneval", BenchmarkEntry(format="humaneval"), work / "all.parquet")
        samples = [s for s in read_records(work / "all.parquet") if s["task_id"] in alternatives][: args.samples]
        write_table(samples, BENCHMARK_SCHEMA, work / "humaneval.parquet")
        twins = [
            {
                **s,
                "benchmark": "modlines",
                "sample_id": s["sample_id"].replace("humaneval/", "modlines/"),
                "code": with_module_lines(s["code"]),
            }
            for s in samples
        ]
        write_table(twins, BENCHMARK_SCHEMA, work / "modlines.parquet")
        every = [d.text for d in iter_stdlib_code(STDLIB_EXCLUDE)]
        step = max(1, len(every) // args.stdlib_files)
        stdlib = every[::step][: args.stdlib_files]  # spread over the library, deterministic
        corpus = work / "corpus"
        planted = plant(samples, alternatives, stdlib, corpus, args.seed)
        for k, text in enumerate(stdlib):
            path = corpus / "stdlib" / f"{k}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        tables = {"humaneval": work / "humaneval.parquet", "modlines": work / "modlines.parquet"}
        runs = {}
        for label, extra in (("new", {}), ("minhash", {"containment_channel": False, "statement_channel": False})):
            settings = scan_slice({**settings_new(corpus), **extra})
            out = work / label
            build_index("kinds", tuple(tables.values()), settings, out / "index.parquet")
            start = time.perf_counter()
            scan_shard(
                "kinds",
                out / "index.parquet",
                tuple(tables.values()),
                settings,
                0,
                1,
                out / "p.parquet",
                out / "a.parquet",
            )
            seconds = time.perf_counter() - start
            gather(
                "kinds", out / "index.parquet", tables, (out / "p.parquet",), (out / "a.parquet",), settings, out / "g"
            )
            runs[label] = (
                read_records(out / "g" / "pairs.parquet"),
                read_records(out / "g" / "accounting.parquet"),
                seconds,
            )
        rephrase = {"enabled": True, "embedder": "tfidf", "top_k": max(TOP_K)}
        rephrase_settings = scan_slice({**settings_new(corpus), "rephrase": rephrase})
        start = time.perf_counter()
        rephrase_shard(
            "kinds",
            tuple(tables.values()),
            rephrase_settings,
            0,
            1,
            work / "rephrase.parquet",
            pairs=work / "new" / "p.parquet",
        )
        rephrase_seconds = time.perf_counter() - start
        candidates = read_records(work / "rephrase.parquet")
        embed_cost = embedding_cost(samples, corpus)
    found_before = tally(runs["minhash"][0], samples)[0]
    found, how, right, false_pos = tally(runs["new"][0], samples)
    pairs, accounting, seconds = runs["new"]
    units = {r["reason"]: r["count"] for r in accounting if r["kind"] == "count"}
    print(
        f"{len(samples)} HumanEval problems with another solution, planted once per kind beside {len(stdlib)} "
        f"standard-library files; default preset ({units.get('units', 0)} units, shard job {seconds:.1f} s; "
        f"{runs['minhash'][2]:.1f} s without the containment and problem-text channels)\n"
    )
    print("| kind | planted | found | recall | recall, MinHash channels alone | found by (channel: clone type) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in KINDS:
        n, f = planted[kind], len(found[kind])
        print(
            f"| {kind} | {n} | {f} | {f / n if n else float('nan'):.3f} | "
            f"{len(found_before[kind]) / n if n else float('nan'):.3f} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(how[kind].items())) or '-'} |"
        )
    in_stdlib = [p for p in false_pos if "/stdlib/" in p["location"]]
    named = ", ".join(sorted(f"{p['sample_id']} in {p['doc_id']} ({p['channel']}, {p['leak']})" for p in in_stdlib))
    print(
        f"\nunplanted standard-library files: {len(in_stdlib)} duplicate pairs ({named or 'none'}); "
        f"planted copies called a duplicate of another sample: {len(false_pos) - len(in_stdlib)}"
    )
    total = right + len(false_pos)
    print(f"precision of all duplicate pairs: {right}/{total} = {right / total if total else float('nan'):.3f}")
    print_rephrase(candidates, samples, planted, rephrase_seconds, embed_cost)


if __name__ == "__main__":
    main()
