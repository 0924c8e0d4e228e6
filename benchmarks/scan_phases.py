"""Where a ``leakage_scan`` job's time goes: the job of
``benchmarks/scan_cost.py`` (HumanEval against the standard library as one
Parquet shard), its CPU seconds split by phase. The job runs unchanged;
its library functions are wrapped, for this run only, by timers that
charge the CPU time of a call to the phase of the outermost timed call
(so a signature computed for the renamed channel is the renamed channel's):

- reading: the source's documents (Parquet batches to strings) and their checks
- units: splitting a document into units (parsing Python, for ``function`` granularity)
- signing: shingle hashes of the preset's scheme, signatures, LSH band queries
- renamed channel: the identifier-normalised shingles, their signatures and queries
- containment windows: the containment channel's shingle sets, its index query, the best window of a long unit
- problem-text channel: the lowercased shingle sets of units and documents, their index query and windows
- candidates: the verifier (both sides lexed and parsed, the verdicts) and the choice of each pair's verdict
- writing: the pairs and the accounting
- setup: the index's bands, the benchmark's channels
- the rest: the unit loop, batching, the pair rows (what no timer covers)

With ``--parsers`` the floor of the units phase is printed too: the CPU
seconds of parsing the same files alone, with ``ast.parse`` (as the job
does, the garbage collector paused), with the parser and symbol table and no
Python objects (``_symtable``), and with tree-sitter's Python grammar (when
installed), and on how many files each says "syntax error" where
``ast.parse`` does not, or the reverse.

With ``--baseline TREE`` the same split is printed for another tree too
(each tree in a fresh process, alternating ``--repeats`` times; the fastest
run of each is shown), so a before/after profile is one command.

    .venv/bin/python benchmarks/scan_phases.py [--preset default] [--files N] [--baseline TREE] [--repeats 1] [--parsers]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scan_cost  # noqa: E402

PHASES = (
    "reading",
    "units",
    "signing",
    "renamed channel",
    "containment windows",
    "problem-text channel",
    "candidates",
    "writing",
    "setup",
)
# the modules that may hold a scan job's code (the stage; the library module its shard logic may move to)
JOB_MODULES = ("leaktrace.stages.leakage", "leaktrace.leakage.scan")


class Timers:
    """CPU seconds per phase, charged to the outermost timed call."""

    def __init__(self):
        self.spent = dict.fromkeys(PHASES, 0.0)
        self.active = False
        self.statements = None  # the problem-text channel's index of the running job

    def timed(self, phase, fn):
        """``fn`` timed as ``phase`` (a name, or a function of the call's arguments giving one)."""

        def wrapper(*args, **kwargs):
            if self.active:
                return fn(*args, **kwargs)
            self.active = True
            c0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[phase(*args, **kwargs) if callable(phase) else phase] += time.process_time() - c0
                self.active = False

        wrapper.__wrapped__ = fn
        return wrapper

    def timed_iterator(self, phase, fn):
        """``fn`` returning an iterator, each of whose steps is timed as ``phase``."""

        def wrapper(*args, **kwargs):
            it = iter(fn(*args, **kwargs))
            step = self.timed(phase, lambda: next(it, _END))
            while (item := step()) is not _END:
                yield item

        return wrapper


_END = object()


def _lower(*args, **kwargs) -> bool:
    return bool(kwargs.get("lower", args[-1] if len(args) > 1 and isinstance(args[-1], bool) else False))


def install(timers: Timers) -> list[dict]:
    """Wrap the scan job's functions where they are looked up; the per-job results list that ``scan_shard`` fills."""
    from leaktrace.leakage.containment import ContainmentIndex
    from leaktrace.leakage.lsh import BandIndex
    from leaktrace.leakage.minhash import Signer
    from leaktrace.leakage.verify import Verifier

    prose_or = {
        True: "problem-text channel",
        False: "containment windows",
    }
    Signer.shingle_hashes = timers.timed("signing", Signer.shingle_hashes)
    Signer.signatures = timers.timed("signing", Signer.signatures)
    BandIndex.query = timers.timed("signing", BandIndex.query)
    ContainmentIndex.query = timers.timed(
        lambda index, sets: prose_or[index is timers.statements], ContainmentIndex.query
    )
    for name in ("side", "verdicts", "execute"):
        setattr(Verifier, name, timers.timed("candidates", getattr(Verifier, name)))
    results: list[dict] = []
    for module_name in JOB_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        plain = {
            "check_document": "reading",
            "document_units": "units",
            "split_units": "units",
            "renamed_hashes": "renamed channel",
            "_query_renamed": "renamed channel",
            "normalised_shingle_hashes": "renamed channel",
            "cut": "containment windows",
            "_best": "candidates",
            "supersede": "candidates",
            "write_table": "writing",
            "_load_index": "setup",
        }
        for name, phase in plain.items():
            if hasattr(module, name):
                setattr(module, name, timers.timed(phase, getattr(module, name)))
        for name in ("hash_set", "best_span", "positional"):
            if hasattr(module, name):
                setattr(
                    module,
                    name,
                    timers.timed(lambda *a, **k: prose_or[_lower(*a, **k)], getattr(module, name)),
                )
        if hasattr(module, "iter_source"):
            module.iter_source = timers.timed_iterator("reading", module.iter_source)
        if hasattr(module, "_channels"):
            channels = module._channels

            def setup_channels(*args, _channels=channels, **kwargs):
                out = timers.timed("setup", _channels)(*args, **kwargs)
                timers.statements = out[1]
                return out

            module._channels = setup_channels
        if hasattr(module, "scan_shard"):
            module.scan_shard = _job(timers, module.scan_shard, results)
    # scan_cost imports scan_shard from the stage at call time: it sees the wrapped one
    return results


def _job(timers: Timers, scan_shard, results: list[dict]):
    def wrapper(*args, **kwargs):
        timers.spent = dict.fromkeys(PHASES, 0.0)
        c0 = time.process_time()
        scan_shard(*args, **kwargs)
        results.append({"total": time.process_time() - c0, **timers.spent})

    return wrapper


def worker(tmp: Path, preset: str, name: str) -> dict:
    timers = Timers()
    results = install(timers)
    job = scan_cost.run_scan(tmp, preset, tmp / name)
    return {**job, "phases": results[-1]}  # the last job is the timed one (the first warms up)


def table(runs: dict[str, dict]) -> str:
    names = list(runs)
    head = "| phase | " + " | ".join(f"{n} CPU s | share" for n in names) + " |"
    rule = "| --- | " + " | ".join("---: | ---:" for _ in names) + " |"
    rows = []
    for phase in (*PHASES, "the rest", "whole job"):
        cells = []
        for r in runs.values():
            p = r["phases"]
            value = {"the rest": p["total"] - sum(p[k] for k in PHASES), "whole job": p["total"]}.get(phase)
            value = p[phase] if value is None else value
            cells.append(f"{value:.2f} | {100 * value / p['total']:.0f}%")
        rows.append(f"| {phase} | " + " | ".join(cells) + " |")
    files = " | ".join(
        f"{r['files'] / r['phases']['total']:.0f} files per CPU second | {r['files']} files" for r in runs.values()
    )
    return "\n".join([head, rule, *rows, f"| speed | {files} |"])


def parsers(path: Path) -> None:
    """The CPU seconds of parsing the corpus's files alone, by three parsers, and where they disagree with ast."""
    import _symtable
    import ast
    import gc
    import warnings

    import pyarrow.parquet as pq

    texts = pq.read_table(path, columns=["content"]).column("content").to_pylist()
    gc.disable()
    warnings.simplefilter("ignore")  # the standard library's tests hold invalid escapes on purpose

    def fails(parse) -> tuple[float, set[int]]:
        bad = set()
        c0 = time.process_time()
        for k, text in enumerate(texts):
            try:
                parse(text)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                bad.add(k)
        return time.process_time() - c0, bad

    runs = {
        "ast.parse": fails(ast.parse),
        "_symtable (parser + symbol table)": fails(lambda t: _symtable.symtable(t, "<unit>", "exec")),
    }
    try:
        import tree_sitter_python
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_python.language()))

        def tree_sitter(text: str) -> None:
            if parser.parse(text.encode("utf-8")).root_node.has_error:
                raise SyntaxError("tree-sitter")

        runs["tree-sitter"] = fails(tree_sitter)
    except ImportError:
        print("tree-sitter's Python grammar is not installed: its line left out")
    gc.enable()
    base = runs["ast.parse"][1]
    print(f"parsing the {len(texts)} files alone (the garbage collector paused), CPU seconds:")
    for name, (cpu, bad) in runs.items():
        print(
            f"  {name:<34} {cpu:6.2f} CPU s; syntax errors {len(bad)}, where ast.parse has none {len(bad - base)},"
            f" missed {len(base - bad)}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="default")
    ap.add_argument("--files", type=int, default=None, help="only the first FILES standard-library files")
    ap.add_argument("--baseline", type=Path, help="another tree to profile in the same run")
    ap.add_argument("--repeats", type=int, default=1, help="alternating runs per tree with --baseline")
    ap.add_argument("--parsers", action="store_true", help="the units phase's floor: the files parsed alone")
    ap.add_argument("--worker", nargs=3, metavar=("DIR", "PRESET", "NAME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        tmp, preset, name = args.worker
        print(json.dumps(worker(Path(tmp), preset, name)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scan_cost.write_corpus(tmp, args.files)
        trees = {"this tree": scan_cost.HERE.parents[1]}
        if args.baseline is not None:
            trees = {"baseline": args.baseline.resolve(), **trees}
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        here = Path(__file__).resolve()
        for r in range(args.repeats):
            for name, tree in trees.items():
                runs[name].append(
                    scan_cost.in_tree(tree, ["--worker", str(tmp), args.preset, f"{name}-{r}"], script=here)
                )
        best = {name: min(rs, key=lambda x: x["phases"]["total"]) for name, rs in runs.items()}
        print(f"{args.preset} scan job by phase (CPU seconds; best of {args.repeats} per tree):")
        print(table(best))
        if args.parsers:
            parsers(tmp / "stdlib.parquet")


if __name__ == "__main__":
    main()
