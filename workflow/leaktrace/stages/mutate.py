"""mutate: CodeSnitch's robustness study on the testbed's own members and non-members.

Three steps. `make_mutations_table`: every configured mutation of every
evaluated sample (seeded per sample and mutation), each run against the
sample's tests in the sandbox with the variants' differential validation;
invalid ones are kept with their reason and never scored, as are T3 texts
that could not reach their target; a mutated text (or neighbour) that leaves
the code unchanged (``variants.validate.is_unchanged``: T1 compared by its
lines, the others by their code tokens) is status ``unchanged``, never
``valid``, not run and never scored; the names T2 renamed are counted by kind
and source (`rename_count_rows`). `score_mutations`: the mutated texts are
more texts of the one-pass token cache, under the keys (sample, 0,
mutation name), with their ReCaLL prefixed pass (views ``prefixed:<name>``)
and ReCaLL's originals after an out-of-distribution prefix (view
``prefixed-ood``). `mutation_study`: the detectors score every text from
those caches, and Settings 1-3, the code-length buckets and the ReCaLL
prefix analysis are evaluated as the paper does.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.data.samples import check_test
from leaktrace.data.split import RECALL_PREFIX
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.recall_relative_ll import prefix_shots, select_prefix_samples
from leaktrace.detect.registry import configured_methods, family_params
from leaktrace.errors import InputError, json_position, utf8_position
from leaktrace.evaluate.metrics import best_balanced_accuracy, roc_auc
from leaktrace.models.token_table import read_token_stats, write_token_stats
from leaktrace.mutate.compiled import test_names, validate_compiled
from leaktrace.mutate.registry import Mutated, Mutation, apply_mutation, configured_mutations
from leaktrace.mutate.renaming import NAME_KINDS, NAME_SOURCES
from leaktrace.report.mutation_plots import setting_heatmaps, t2_drop_plot
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level
from leaktrace.seeding import rng_for
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.mutate import MutationsSettings, MutationStudySettings, RecallParams
from leaktrace.settings.score import TokenBatch
from leaktrace.variants.lexicon import IdentifierLexicon
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.renaming import replay_renames
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.variants.validate import is_unchanged, reserved_names, validate_variants, variant_status

log = logging.getLogger(__name__)

# The detectors CodeSnitch studies whose evidence the caches give for a mutated text. Neighbor's
# neighbours of a mutated text are its original's variants replayed on it (mutate.neighbors);
# SrDetection's variants are the original's; Lowercase and DC-PDD are not in the paper's study.
STUDY_FAMILIES = ("loss", "zlib", "min_k", "min_k_plus_plus", "ref", "recall", "neighbor")
ORIGINAL = "original"

MUTATIONS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("mutation", pa.string()),  # T1, T2a, T2b, T3-<target>, hybrid-<target>
        # 0: the mutated text; k > 0: its Neighbor neighbour, the original's variant k's renaming replayed on it
        ("neighbor", pa.int32()),
        ("text", pa.string()),
        ("similarity", pa.float64()),  # T3/hybrid: the statement step's achieved value; else unchanged/total lines
        ("target", pa.float64()),  # T3/hybrid: the target similarity
        ("reached", pa.bool_()),  # T3/hybrid: within one line of the target; T1/T2: the text changed
        ("details", pa.string()),  # JSON: renames, rewrites applied
        ("valid", pa.bool_()),
        ("invalid_reason", pa.string()),
        ("isolation", pa.string()),
        ("status", pa.string()),  # valid, invalid, or unchanged (the code is the original's: not valid, counted apart)
    ]
)

STUDY_SCHEMA = pa.schema(
    [
        ("analysis", pa.string()),  # setting1, setting2, setting3, length, recall_prefix
        ("condition", pa.string()),  # the mutation, clone definition, length bucket or prefix
        ("method", pa.string()),
        ("n_members", pa.int32()),
        ("n_non_members", pa.int32()),
        ("auc", pa.float64()),
        ("accuracy", pa.float64()),  # CodeSnitch's: max over thresholds of 1 - (FPR + FNR) / 2
    ]
)

# T2's renamed names per kind of name and source of the new name (CodeSnitch: T2a renames what T2b does)
RENAMES_SCHEMA = pa.schema(
    [
        ("mutation", pa.string()),  # T2a, T2b, hybrid-<target>
        ("kind", pa.string()),  # parameter, local, global, function, class (mutate.renaming.NAME_KINDS)
        ("source", pa.string()),  # synonym, abbreviation, numbered, random
        ("names", pa.int64()),  # renamed names, summed over the samples
        ("samples", pa.int32()),  # samples the mutation made a text for (the denominator)
        ("valid_names", pa.int64()),  # of `names`, those in texts that pass their tests
    ]
)

OVERLAP_SCHEMA = pa.schema(
    [("prefix", pa.string()), ("against", pa.string()), ("n", pa.int32()), ("overlap", pa.float64())]
)


def _evaluated(samples: Path, folds: Sequence[str]) -> dict[str, str]:
    """sample_id -> "member" / "non-member" for the split's samples in `folds`."""
    return {
        r["sample_id"]: r["split"]
        for r in read_records(samples, ["sample_id", "kept", "split", "fold"])
        if r["kept"] and r["fold"] in folds
    }


def _rename_variants(variants: Path, evaluated: dict[str, str], n: int) -> dict[str, list[tuple[int, dict]]]:
    """sample_id -> (variant_id, renames) of its first `n` valid detector variants: the
    neighbours Neighbor scores for the original, whose renamings the mutated texts replay."""
    chosen: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    if n == 0:
        return chosen
    rows = read_records(variants, ["sample_id", "variant_id", "kind", "renames", "valid"])
    for r in sorted(rows, key=lambda r: (r["sample_id"], r["variant_id"])):
        if r["sample_id"] in evaluated and r["kind"] == "rename" and r["valid"] and len(chosen[r["sample_id"]]) < n:
            chosen[r["sample_id"]].append((r["variant_id"], json.loads(r["renames"])))
    return chosen


def _neighbour_renames(variant_renames: dict[str, str], mutated: Mutated) -> dict[str, str]:
    """The variant's renaming in the mutated text's names: a name T2 renamed is found under its new name."""
    own = mutated.details.get("renames", {})
    return {own.get(old, old): new for old, new in variant_renames.items()}


def make_mutations_table(
    benchmark: Path,
    samples: Path,
    variants: Path,
    lexicon: Path,
    settings: MutationsSettings,
    seed: int,
    output: Path,
    renames: Path,
    workers: int = 1,
) -> None:
    """Mutate the split's samples by clone type (T1, T2a, T2b, T3, Hybrid) and validate every mutation
    against the sample's tests in the sandbox; ``renames``: T2's renamed names by kind; ``workers``:
    sandboxed runs in parallel."""
    words = IdentifierLexicon.from_records(read_records(lexicon))
    names = NameProposer(WordAlternatives(words.word_counts), words.word_counts)
    evaluated = _evaluated(samples, settings.folds)
    mutations = configured_mutations(settings.kinds, settings.t3_targets, settings.hybrid_target)
    neighbours = _rename_variants(variants, evaluated, settings.neighbors)
    rows, programs, originals = [], [], []
    for s in (s for s in read_records(benchmark) if s["sample_id"] in evaluated):
        test, _ = check_test(
            s, str(benchmark)
        )  # check code (a test script made into one); None: stdin/stdout or unittest
        if test is None:
            continue
        base = len(programs)
        programs.append((s["code"], test, s["entry_point"]))
        originals.append(base)
        protected = reserved_names(test)
        for mutation in mutations:
            rng = rng_for(seed, "mutate", mutation.name, s["sample_id"])
            row = {"sample_id": s["sample_id"], "mutation": mutation.name, "neighbor": 0, "target": mutation.target}
            try:
                mutated = apply_mutation(
                    mutation, s["code"], "python", s["entry_point"], rng, names=names, protected=protected
                )
            except ValueError as error:  # a sample this mutation cannot take
                rows.append(
                    {
                        **row,
                        "text": None,
                        "similarity": None,
                        "reached": False,
                        "details": "{}",
                        "valid": False,
                        "invalid_reason": f"mutation: {error}",
                        "status": "invalid",
                    }
                )
                continue
            row |= {
                "text": mutated.text,
                "similarity": mutated.similarity,
                "reached": mutated.reached,
                "details": json.dumps(mutated.details, sort_keys=True),
            }
            if is_unchanged(s["code"], mutated.text, "python", layout=mutation.kind == "T1"):
                rows.append({**row, "valid": False, "invalid_reason": None, "status": "unchanged"})
                continue
            rows.append({**row, "_program": len(programs)})
            programs.append((mutated.text, test, mutated.entry_point))
            originals.append(base)
            for variant_id, variant_renames in neighbours.get(s["sample_id"], []):
                replayed = replay_renames(
                    mutated.text, mutated.entry_point, _neighbour_renames(variant_renames, mutated), reserved=protected
                )
                neighbour = {**row, "neighbor": variant_id, "similarity": None, "reached": mutated.reached}
                if replayed is None:
                    rows.append(
                        {
                            **neighbour,
                            "text": None,
                            "details": "{}",
                            "valid": False,
                            "status": "invalid",
                            "invalid_reason": "neighbor: no name of the variant's renaming is in the mutated text",
                        }
                    )
                    continue
                if is_unchanged(mutated.text, replayed.text, "python"):
                    rows.append(
                        {
                            **neighbour,
                            "text": replayed.text,
                            "details": json.dumps({"renames": replayed.renames}, sort_keys=True),
                            "valid": False,
                            "invalid_reason": None,
                            "status": "unchanged",
                        }
                    )
                    continue
                rows.append(
                    {
                        **neighbour,
                        "text": replayed.text,
                        "details": json.dumps({"renames": replayed.renames}, sort_keys=True),
                        "_program": len(programs),
                    }
                )
                programs.append((replayed.text, test, replayed.entry_point))
                originals.append(base)
    limits = SandboxLimits(**dataclasses.asdict(settings.sandbox))
    try:
        isolation = isolation_level(limits)
    except SandboxUnavailable as error:
        raise InputError("config mutate.sandbox", None, str(error)) from None
    verdicts = validate_variants(programs, originals, limits, workers=workers)
    for row in rows:
        row["isolation"] = isolation
        if "_program" in row:
            row["valid"], row["invalid_reason"] = verdicts[row.pop("_program")]
            row["status"] = variant_status(row["valid"], False)
    write_table(rows, MUTATIONS_SCHEMA, output)
    texts = [r for r in rows if r["neighbor"] == 0]
    counts = rename_count_rows(texts)
    write_table(counts, RENAMES_SCHEMA, renames)
    log.info(
        "renamed names per sample: %s",
        {
            m: round(
                sum(r["names"] for r in counts if r["mutation"] == m)
                / max(1, next(r["samples"] for r in counts if r["mutation"] == m)),
                2,
            )
            for m in dict.fromkeys(r["mutation"] for r in counts)
        },
    )
    log.info(
        "%d samples, %d mutations each; valid (unchanged) by mutation: %s; valid neighbours: %d of %d",
        len(evaluated),
        len(mutations),
        {
            m.name: f"{sum(r['valid'] for r in texts if r['mutation'] == m.name)} "
            f"({sum(r['status'] == 'unchanged' for r in texts if r['mutation'] == m.name)})"
            for m in mutations
        },
        sum(r["valid"] for r in rows if r["neighbor"]),
        sum(1 for r in rows if r["neighbor"]),
    )


def rename_count_rows(texts: list[dict]) -> list[dict]:
    """The names each renaming mutation (T2a, T2b, Hybrid's T2a step) renamed, summed over
    its texts by kind of name and source of the new name (`RENAMES_SCHEMA`)."""
    rows = []
    for mutation in dict.fromkeys(r["mutation"] for r in texts):
        own = [r for r in texts if r["mutation"] == mutation and r["text"] is not None]
        details = [(json.loads(r["details"]), bool(r["valid"])) for r in own]
        if not any("kinds" in d for d, _ in details):
            continue
        names, valid = Counter(), Counter()
        for d, ok in details:
            for old in d.get("renames", {}):
                key = (d["kinds"].get(old, "local"), d["sources"].get(old, "synonym"))
                names[key] += 1
                valid[key] += ok
        rows += [
            {
                "mutation": mutation,
                "kind": kind,
                "source": source,
                "names": names[kind, source],
                "samples": len(own),
                "valid_names": valid[kind, source],
            }
            for kind, source in sorted(names)
        ]
    return rows


def rename_table(counts: list[dict]) -> list[str]:
    """Markdown: names renamed per sample, by kind, for each renaming mutation (and T2a's by source)."""
    mutations = list(dict.fromkeys(r["mutation"] for r in counts))
    if not mutations:
        return []
    samples = {m: next(r["samples"] for r in counts if r["mutation"] == m) for m in mutations}
    kinds = [k for k in NAME_KINDS if any(r["kind"] == k for r in counts)]

    def per_sample(mutation, kind=None, source=None):
        total = sum(
            r["names"]
            for r in counts
            if r["mutation"] == mutation and kind in (None, r["kind"]) and source in (None, r["source"])
        )
        return f"{total / max(1, samples[mutation]):.2f}"

    lines = [
        "",
        "### Names renamed per sample, by kind",
        "",
        "Every renamable name (the variants' scope analysis: never a builtin, attribute, import, class member, "
        "method parameter, the entry point or a name of the tests) is attempted by T2a and T2b alike; T2a's new "
        "name is a synonym, else an abbreviation, else the name with a number.",
        "",
        "| kind | " + " | ".join(f"{m} ({samples[m]} samples)" for m in mutations) + " |",
        "| --- |" + " --- |" * len(mutations),
    ]
    lines += [f"| {k} | " + " | ".join(per_sample(m, kind=k) for m in mutations) + " |" for k in kinds]
    lines.append("| all | " + " | ".join(per_sample(m) for m in mutations) + " |")
    sources = [s for s in NAME_SOURCES if any(r["source"] == s for r in counts)]
    lines += [
        "",
        "By source of the new name (per sample): "
        + "; ".join(
            f"{m}: "
            + ", ".join(
                f"{s} {per_sample(m, source=s)}"
                for s in sources
                if any(r["mutation"] == m and r["source"] == s for r in counts)
            )
            for m in mutations
        ),
    ]
    return lines


def scored_mutations(mutations: Path, *, neighbours: bool = False) -> list[dict]:
    """The mutated texts that may be scored: valid, and at their target; with
    `neighbours`, also the valid neighbours of those texts."""
    rows = read_records(mutations, ["sample_id", "mutation", "neighbor", "text", "valid", "reached"])
    scorable = {(r["sample_id"], r["mutation"]) for r in rows if r["neighbor"] == 0 and r["valid"] and r["reached"]}
    return [
        r
        for r in rows
        if (r["sample_id"], r["mutation"]) in scorable and r["valid"] and (r["neighbor"] == 0 or neighbours)
    ]


def ood_prefix_texts(corpus: list[Path], k: int, seed: int, min_chars: int = 200, max_chars: int = 1500) -> list[str]:
    """`k` top-level functions of a code corpus, one from each of `k` files drawn by seed:
    ReCaLL's out-of-distribution prefix. Files are parsed in the drawn order until `k` have a
    function of HumanEval's size, so a large corpus is never parsed whole."""
    texts = [r["text"] for part in corpus for r in read_records(part, ["text"])]
    rng = rng_for(seed, "recall", "ood-prefix")
    functions = []
    for index in rng.sample(range(len(texts)), len(texts)):
        try:
            tree = ast.parse(texts[index])
        except (SyntaxError, ValueError):
            continue
        segments = [
            ast.get_source_segment(texts[index], node) or "" for node in tree.body if isinstance(node, ast.FunctionDef)
        ]
        segments = [segment + "\n" for segment in segments if min_chars <= len(segment) <= max_chars]
        if segments:
            functions.append(rng.choice(segments))
        if len(functions) == k:
            return functions
    raise ValueError(f"the corpus has {len(functions)} files with a function for an out-of-distribution prefix of {k}")


def score_mutations(
    mutations: Path,
    variants: Path,
    samples: Path,
    corpus: tuple[Path, ...],
    model: ModelSettings,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
    recall: RecallParams | None = None,
    neighbors: bool = False,
) -> None:
    """Token statistics of every scorable mutated text under one model.

    View = its mutation; variant id = 0, or k for its neighbour after the original's variant k, with
    ``neighbors``; with ReCaLL configured (``recall``), each text also after the in-distribution prefix,
    and every original after an out-of-distribution one of as many shots."""
    from leaktrace.models.configured import language_model  # imports torch: only where a model runs

    lm = language_model(model, adapter, batch)
    everything = scored_mutations(mutations, neighbours=neighbors)
    keys = [(r["sample_id"], r["neighbor"], r["mutation"]) for r in everything]
    stats = lm.score([r["text"] for r in everything])
    texts = [r for r in everything if r["neighbor"] == 0]
    if recall is not None:
        params = family_params("recall", dataclasses.asdict(recall))
        held_out = [r["sample_id"] for r in read_records(samples, ["sample_id", "fold"]) if r["fold"] == RECALL_PREFIX]
        all_originals = {
            v["sample_id"]: v["text"]
            for v in read_records(variants, ["sample_id", "variant_id", "text"])
            if v["variant_id"] == 0
        }
        shots = prefix_shots([all_originals[sid] for sid in select_prefix_samples(held_out, params["n_shots"], seed)])
        keys += [(r["sample_id"], 0, f"prefixed:{r['mutation']}") for r in texts]
        stats += lm.score_conditioned(shots, [r["text"] for r in texts], max_prefix_tokens=params["max_prefix_tokens"])
        evaluated = sorted({r["sample_id"] for r in read_records(mutations, ["sample_id"])})
        ood = prefix_shots(ood_prefix_texts(corpus, params["n_shots"], seed))
        keys += [(sid, 0, "prefixed-ood") for sid in evaluated]
        stats += lm.score_conditioned(
            ood, [all_originals[sid] for sid in evaluated], max_prefix_tokens=params["max_prefix_tokens"]
        )
    write_token_stats(keys, stats, output)
    log.info("scored %d mutated texts under %s", len(texts), lm.name)


# ---------------------------------------------------------------------------
# The study


def _text_scores(
    methods, texts: dict[tuple[str, str], str], target: dict, reference: dict, prefixed: dict, neighbour_ids: list[int]
) -> dict:
    """(sample_id, condition) -> method -> score, for every text with its evidence. A text's
    neighbours are those of `neighbour_ids` (its original's variants) scored for it."""
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for (sid, condition), text in texts.items():
        view = "text" if condition == ORIGINAL else condition
        original = target.get((sid, 0, view))
        if original is None:
            continue
        neighbours = tuple(target[sid, k, view] for k in neighbour_ids if (sid, k, view) in target)
        evidence = SampleEvidence(
            sample_id=sid,
            text=text,
            original=original,
            reference=reference.get((sid, 0, view)),
            prefixed=prefixed.get(condition),
            variants=neighbours,
        )
        scores[sid, condition] = {
            m.name: m.score(evidence)
            for m in methods
            if not (m.needs_reference and evidence.reference is None)
            and not (m.needs_variants and not evidence.variants)
            and not (m.needs_prefixed and (evidence.prefixed is None or not evidence.prefixed.prefix_tokens))
        }
    return scores


def _evaluate(analysis: str, condition: str, positives: list[dict], negatives: list[dict]) -> list[dict]:
    """AUC and CodeSnitch's accuracy per method over the texts both sides have a score for."""
    rows = []
    for method in sorted({m for side in (positives, negatives) for s in side for m in s}):
        pos = [s[method] for s in positives if method in s]
        neg = [s[method] for s in negatives if method in s]
        labels = np.array([1] * len(pos) + [0] * len(neg))
        values = np.array(pos + neg, dtype=float)
        rows.append(
            {
                "analysis": analysis,
                "condition": condition,
                "method": method,
                "n_members": len(pos),
                "n_non_members": len(neg),
                "auc": roc_auc(labels, values) if len(values) else None,
                "accuracy": best_balanced_accuracy(labels, values) if len(values) else None,
            }
        )
    return rows


def setting_rows(scores: dict, split: dict[str, str], mutations: list[Mutation]) -> list[dict]:
    """Settings 1-3 (CodeSnitch Sec. 5.2) from per-text scores."""
    members = sorted(s for s, side in split.items() if side == "member")
    non_members = sorted(s for s, side in split.items() if side == "non-member")

    def side(ids, condition):
        return [scores[sid, condition] for sid in ids if (sid, condition) in scores]

    rows = _evaluate("setting1", ORIGINAL, side(members, ORIGINAL), side(non_members, ORIGINAL))
    for m in mutations:
        # 1: members replaced by their mutation; 3: the mutation on both sides
        rows += _evaluate("setting1", m.name, side(members, m.name), side(non_members, ORIGINAL))
        rows += _evaluate("setting3", m.name, side(members, m.name), side(non_members, m.name))
    # 2: under a Type-l definition the mutations up to l stay members; the same ones are applied to non-members
    for condition, kept, beyond in setting2_definitions(mutations):
        positives = side(members, ORIGINAL) + [s for m in kept for s in side(members, m.name)]
        negatives = (
            [s for m in beyond for s in side(members, m.name)]
            + side(non_members, ORIGINAL)
            + [s for m in kept for s in side(non_members, m.name)]
        )
        rows += _evaluate("setting2", condition, positives, negatives)
    return rows


def setting2_definitions(mutations: list[Mutation]) -> list[tuple[str, list[Mutation], list[Mutation]]]:
    """CodeSnitch's Setting 2 (Sec. 5.2): (condition, kept, beyond) for Verbatim and each
    clone definition. The paper studies one mutation per level, MT1, MT2, MT3 at each target
    (and Hybrid): under a Type-l definition the members are D_m and its mutations up to l,
    the non-members its mutations beyond l, D_nm and D_nm's mutations up to l. T2a and T2b
    are two versions of MT2, so each definition takes one of them, never both: the paper's
    MT2 is T2a (its Tables 2-4; Hybrid builds on it), used by every column but "up to T2b",
    which is the Type-2 definition with T2b as MT2 (the worst case) in its place."""
    type2 = [m for m in mutations if m.kind in ("T2a", "T2b")]
    default = type2[0] if type2 else None  # configured_mutations sorts T2a before T2b

    def pool(mt2: Mutation | None) -> list[Mutation]:
        return [m for m in mutations if m not in type2 or m == mt2]

    definitions = []
    for definition in [None, *mutations]:
        mutations_here = pool(definition if definition in type2 else default)
        kept = [m for m in mutations_here if definition is not None and m.clone_key <= definition.clone_key]
        beyond = [m for m in mutations_here if m not in kept]
        definitions.append(("verbatim" if definition is None else f"up to {definition.name}", kept, beyond))
    return definitions


def t2_drop_rows(rows: list[dict]) -> list[dict]:
    """CodeSnitch Fig. 3: per method, Setting 1's AUC under T2a minus under T2b
    (random names remove what synonyms keep); empty unless both were run."""
    auc = {(r["method"], r["condition"]): r["auc"] for r in rows if r["analysis"] == "setting1"}
    return [
        {"method": m, "auc_t2a": auc[m, "T2a"], "auc_t2b": auc[m, "T2b"], "drop": auc[m, "T2a"] - auc[m, "T2b"]}
        for m in sorted({m for m, _ in auc})
        if auc.get((m, "T2a")) is not None and auc.get((m, "T2b")) is not None
    ]


def length_rows(scores: dict, split: dict[str, str], lengths: dict[str, int], edges: list[int]) -> list[dict]:
    """RQ3: the originals' AUC in token-count buckets [edges[i], edges[i+1])."""
    rows = []
    for low, high in zip(edges, edges[1:], strict=False):
        inside = [sid for sid in split if low <= lengths.get(sid, -1) < high]
        rows += _evaluate(
            "length",
            f"{low}-{high}",
            [scores[s, ORIGINAL] for s in inside if split[s] == "member" and (s, ORIGINAL) in scores],
            [scores[s, ORIGINAL] for s in inside if split[s] == "non-member" and (s, ORIGINAL) in scores],
        )
    return rows


_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    tokens = _CODE_TOKEN.findall(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def ngram_overlap(prefix: list[str], texts: list[str], n: int) -> float:
    """Share of the prefix's code-token n-grams that occur in `texts` (CodeSnitch Fig. 6)."""
    grams = set().union(*(_ngrams(t, n) for t in prefix))
    seen = set().union(*(_ngrams(t, n) for t in texts)) if texts else set()
    return len(grams & seen) / len(grams) if grams else float("nan")


def mutation_study(
    mutations: Path,
    samples: Path,
    variants: Path,
    tokens: Path,
    mutated_tokens: Path,
    corpus: tuple[Path, ...],
    settings: MutationStudySettings,
    seed: int,
    output_dir: Path,
    prefixed: Path | None = None,
    reference: Path | None = None,
    reference_mutated: Path | None = None,
) -> None:
    """Evaluate the detectors on the mutated texts under CodeSnitch's Settings 1-3, by code length and
    with ReCaLL's out-of-distribution prefix; write the study's tables, report and heatmaps.

    ``tokens``, ``mutated_tokens``: the studied model's statistics of the originals and the mutations;
    ``reference``, ``reference_mutated``: the reference model's (Ref); ``prefixed``: ReCaLL's prefixed
    pass; ``corpus``: the out-of-distribution prefix's corpus."""
    reference_tokens, methods_config = reference, settings.methods
    output_dir.mkdir(parents=True, exist_ok=True)
    split = _evaluated(samples, settings.folds)
    mutation_list = configured_mutations(settings.kinds, settings.t3_targets, settings.hybrid_target)
    table = [r for r in read_records(mutations) if r["neighbor"] == 0]
    neighbour_ids = {
        sid: [k for k, _ in chosen] for sid, chosen in _rename_variants(variants, split, settings.neighbors).items()
    }
    originals = {
        v["sample_id"]: v["text"]
        for v in read_records(variants, ["sample_id", "variant_id", "text"])
        if v["variant_id"] == 0
    }
    texts = {(sid, ORIGINAL): originals[sid] for sid in split if sid in originals}
    texts |= {(r["sample_id"], r["mutation"]): r["text"] for r in table if r["valid"] and r["reached"]}
    target = read_token_stats(tokens) | read_token_stats(mutated_tokens)
    reference = read_token_stats(reference_tokens) | read_token_stats(reference_mutated) if reference_tokens else {}
    prefixed_all = (read_token_stats(prefixed) if prefixed else {}) | target
    wanted = {family: methods_config[family] for family in STUDY_FAMILIES if family in methods_config}
    methods = [m for m in configured_methods(wanted) if not m.needs_oracle_reference]

    def prefixed_for(sid):
        return {
            condition: prefixed_all.get((sid, 0, "prefixed" if condition == ORIGINAL else f"prefixed:{condition}"))
            for condition in [ORIGINAL, *(m.name for m in mutation_list)]
        }

    scores = {}
    for sid in split:
        own = {key: text for key, text in texts.items() if key[0] == sid}
        scores |= _text_scores(methods, own, target, reference, prefixed_for(sid), neighbour_ids.get(sid, []))
    rows = setting_rows(scores, split, mutation_list)
    lengths = {sid: target[(sid, 0, "text")].n_tokens for sid in split if (sid, 0, "text") in target}
    rows += length_rows(scores, split, lengths, list(settings.length_edges))
    # ReCaLL with the out-of-distribution prefix, beside the in-distribution one (Setting 1's "original")
    recall_methods = [m for m in methods if m.needs_prefixed]
    ood = {
        sid: {
            m.name: m.score(
                SampleEvidence(sid, originals[sid], target[(sid, 0, "text")], prefixed=target[(sid, 0, "prefixed-ood")])
            )
            for m in recall_methods
        }
        for sid in split
        if (sid, 0, "prefixed-ood") in target and target[(sid, 0, "prefixed-ood")].prefix_tokens
    }
    rows += _evaluate(
        "recall_prefix",
        "out-of-distribution",
        [ood[s] for s in ood if split[s] == "member"],
        [ood[s] for s in ood if split[s] == "non-member"],
    )
    write_table(rows, STUDY_SCHEMA, output_dir / "study.parquet")
    overlap_rows = _overlap_rows(samples, originals, split, corpus, methods_config, seed)
    write_table(overlap_rows, OVERLAP_SCHEMA, output_dir / "prefix_overlap.parquet")
    drops = t2_drop_rows(rows)
    setting_heatmaps(rows, output_dir / "heatmaps.png")
    if drops:
        t2_drop_plot(drops, output_dir / "t2_drop.png")
    (output_dir / "report.md").write_text(
        study_report(rows, table, mutation_list, overlap_rows, drops), encoding="utf-8"
    )
    log.info("study: %d rows over %d samples, %d mutations", len(rows), len(split), len(mutation_list))


def _overlap_rows(
    samples: Path, originals: dict[str, str], split: dict[str, str], corpus: list[Path], methods_config: dict, seed: int
) -> list[dict]:
    if "recall" not in methods_config:
        return []
    params = family_params("recall", methods_config["recall"])
    held_out = [r["sample_id"] for r in read_records(samples, ["sample_id", "fold"]) if r["fold"] == RECALL_PREFIX]
    prefixes = {
        "in-distribution": [originals[s] for s in select_prefix_samples(held_out, params["n_shots"], seed)],
        "out-of-distribution": ood_prefix_texts(corpus, params["n_shots"], seed),
    }
    sides = {
        side: [originals[s] for s in split if split[s] == side and s in originals] for side in ("member", "non-member")
    }
    return [
        {"prefix": name, "against": side, "n": n, "overlap": ngram_overlap(prefix, texts, n)}
        for name, prefix in prefixes.items()
        for side, texts in sides.items()
        for n in range(1, 9)
    ]


def _cell(value) -> str:
    return "–" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.3f}"


def study_report(
    rows: list[dict], table: list[dict], mutations: list[Mutation], overlap: list[dict], drops: list[dict]
) -> str:
    """The study's Markdown: validity, then an AUC table (method x condition) per analysis."""
    lines = [
        "## CodeSnitch robustness study",
        "",
        "Mutated samples that pass their tests in the sandbox "
        "(differential validation) and, for T3, reach their target within one line; only these are scored. "
        "Unchanged: the mutation left the code as it was (T1: the same lines up to trailing whitespace; the "
        "others: the same code tokens), counted apart, neither valid nor invalid, never scored.",
        "",
        "| mutation | samples | valid | unchanged | invalid | at target | scored | mean similarity |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in mutations:
        own = [r for r in table if r["mutation"] == m.name]
        scored = [r for r in own if r["valid"] and r["reached"]]
        similarity = [r["similarity"] for r in own if r["similarity"] is not None]
        unchanged = sum(r.get("status") == "unchanged" for r in own)
        lines.append(
            f"| {m.name} | {len(own)} | {sum(bool(r['valid']) for r in own)} | {unchanged} | "
            f"{sum(not r['valid'] for r in own) - unchanged} | {sum(r['reached'] for r in own)} | "
            f"{len(scored)} | {_cell(float(np.mean(similarity)) if similarity else None)} |"
        )
    reasons = Counter(
        (r["invalid_reason"] or "").split(":")[0] for r in table if not r["valid"] and r.get("status") != "unchanged"
    )
    if reasons:
        lines += ["", "Invalid, by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))]
    lines += rename_table(rename_count_rows(table))
    titles = {
        "setting1": "Setting 1 (member-only mutation): AUC",
        "setting2": "Setting 2 (clone-type aware): AUC",
        "setting3": "Setting 3 (isolated mutation): AUC",
        "length": "Code length (original texts): AUC",
        "recall_prefix": "ReCaLL with an out-of-distribution prefix (originals): AUC",
    }
    for analysis, title in titles.items():
        own = [r for r in rows if r["analysis"] == analysis]
        if not own:
            continue
        conditions = list(dict.fromkeys(r["condition"] for r in own))
        methods = sorted({r["method"] for r in own})
        cell = {(r["method"], r["condition"]): r for r in own}
        lines += [
            "",
            f"### {title}",
            "",
            "| method | " + " | ".join(conditions) + " |",
            "| --- |" + " --- |" * len(conditions),
        ]
        lines += [
            f"| {m} | " + " | ".join(_cell(cell[m, c]["auc"]) if (m, c) in cell else "–" for c in conditions) + " |"
            for m in methods
        ]
        counts = {
            c: (cell[next(iter(methods)), c]["n_members"], cell[next(iter(methods)), c]["n_non_members"])
            for c in conditions
            if (next(iter(methods)), c) in cell
        }
        lines += ["", "Texts (members / non-members): " + ", ".join(f"{c} {p}/{n}" for c, (p, n) in counts.items())]
    if drops:
        lines += [
            "",
            "### AUC drop from T2a (synonyms) to T2b (random names), Setting 1",
            "",
            "| method | T2a | T2b | drop |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {d['method']} | {_cell(d['auc_t2a'])} | {_cell(d['auc_t2b'])} | {_cell(d['drop'])} |" for d in drops
        ]
    lines += [
        "",
        "Heat maps of every setting: `heatmaps.png`" + ("; the T2a-to-T2b drop: `t2_drop.png`." if drops else "."),
    ]
    if overlap:
        lines += [
            "",
            "### ReCaLL prefix: share of its code-token n-grams found in each side",
            "",
            "| prefix | side | " + " | ".join(f"n={n}" for n in range(1, 9)) + " |",
            "| --- | --- |" + " --- |" * 8,
        ]
        grouped = defaultdict(dict)
        for r in overlap:
            grouped[r["prefix"], r["against"]][r["n"]] = r["overlap"]
        lines += [
            f"| {p} | {a} | " + " | ".join(_cell(v[n]) for n in range(1, 9)) + " |" for (p, a), v in grouped.items()
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Users' own code


def _read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON lines file, split at newlines only: str.splitlines would also split
    inside a string holding U+2028 (which JSON allows unescaped) and miscount every later line."""
    records = []
    for number, data in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(str(path), f"line {number}", f"not UTF-8 ({utf8_position(data, error, number)})") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(str(path), f"line {number}", f"not JSON ({json_position(error, number)})") from None
        if not isinstance(record, dict) or not isinstance(record.get("code"), str) or "id" not in record:
            raise InputError(str(path), f"line {number}", "each line needs an object with `id` and `code`")
        records.append(record)
    return records


def mutate_jsonl(
    input: Annotated[Path, "JSONL: id, code, language, optional tests and entry_point"],
    output: Path,
    /,
    kind: Literal["T1", "T2a", "T2b", "T3", "hybrid"],
    target: Annotated[float | None, "T3 / hybrid target similarity (default 0.7 / 0.8)"] = None,
    seed: int = 0,
    lexicon: Path | None = None,
    workers: Annotated[int, "sandbox runs in parallel"] = 1,
) -> None:
    """Mutate each input line's code by one clone type, with the achieved similarity and, where tests are
    given, the sandbox's verdict.

    `validation`: "sandbox": Python against its test (with an entry point), Java and C++ built and run
    with theirs where the compiler is installed, else "unvalidated" with the reason. Without a lexicon
    (`lexicon.parquet` of a run), T2a offers only the curated word table's synonyms (and its fallbacks)."""
    input_path, limits = input, SandboxLimits()
    if kind in ("T3", "hybrid") and target is None:
        target = 0.7 if kind == "T3" else 0.8
    mutation = Mutation(kind, target if kind in ("T3", "hybrid") else None)
    counts = IdentifierLexicon.from_records(read_records(lexicon)).word_counts if lexicon else Counter()
    names = NameProposer(WordAlternatives(counts), counts)
    out, programs, originals, builds, build_originals = [], [], [], [], []
    for record in _read_jsonl(input_path):
        language = record.get("language", "python")
        tests, entry_point = record.get("tests"), record.get("entry_point")
        compiled = language.lower() in ("java", "cpp", "c++")
        row = {
            "id": record["id"],
            "mutation": mutation.name,
            "valid": None,
            "invalid_reason": None,
            "validation": None,
            "status": None,
        }
        try:
            protected = (test_names(tests) if compiled else reserved_names(tests)) if tests else ()
            mutated = apply_mutation(
                mutation,
                record["code"],
                language,
                entry_point,
                rng_for(seed, "mutate", mutation.name, record["id"]),
                names=names,
                protected=protected,
            )
        except (ValueError, SyntaxError) as error:
            out.append(
                {
                    **row,
                    "code": None,
                    "similarity": None,
                    "reached": False,
                    "valid": False,
                    "invalid_reason": f"mutation: {error}",
                    "status": "invalid",
                }
            )
            continue
        row |= {"code": mutated.text, "similarity": mutated.similarity, "reached": mutated.reached, **mutated.details}
        if is_unchanged(record["code"], mutated.text, language, layout=mutation.kind == "T1"):
            out.append({**row, "valid": False, "status": "unchanged"})  # not run: nothing was mutated
            continue
        if tests and entry_point and language.lower() == "python":
            row["_program"] = len(programs)
            originals += [len(programs), len(programs)]
            programs += [(record["code"], tests, entry_point), (mutated.text, tests, entry_point)]
        elif tests and compiled:
            row["_build"] = len(builds)
            build_originals += [len(builds), len(builds)]
            builds += [(language, record["code"], tests), (language, mutated.text, tests)]
        out.append(row)
    verdicts = validate_variants(programs, originals, limits, workers=workers) if programs else []
    build_verdicts = validate_compiled(builds, build_originals, limits, workers=workers) if builds else []
    for row in out:
        if "_program" in row:
            row["valid"], row["invalid_reason"] = verdicts[row.pop("_program") + 1]
            row["validation"] = "sandbox"
        elif "_build" in row:
            row["valid"], row["invalid_reason"] = build_verdicts[row.pop("_build") + 1]
            row["validation"] = "unvalidated" if row["valid"] is None else "sandbox"
        if row["status"] is None:
            row["status"] = variant_status(row["valid"], False)
    output.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in out), encoding="utf-8")
    log.info(
        "%s: %d of %d mutated; %d unchanged; %d validated, %d valid",
        mutation.name,
        sum(r["code"] is not None for r in out),
        len(out),
        sum(r["status"] == "unchanged" for r in out),
        sum(r["valid"] is not None and r["status"] != "unchanged" for r in out),
        sum(bool(r["valid"]) for r in out),
    )
