"""A scan's settings: a preset (``default`` or ``lessleak``) overridden key by
key by the scan's config slice (:class:`~leaktrace.settings.leakage.ScanSlice`,
whose null keys take the preset's value), checked once, with a clear error
naming the scan.

A preset is a method: its values (the LSH threshold the banding is chosen
for, the shingles, the verifier's thresholds) are the parameters that define
it, here once; the config's defaults (``config/schema.yaml``) leave every
scheme key null, so a scan is its preset unless it says otherwise."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from leaktrace.config_slice import read_slice
from leaktrace.errors import InputError
from leaktrace.leakage.lsh import choose_bands
from leaktrace.leakage.minhash import MinHashScheme
from leaktrace.leakage.rephrase import rephrase_settings
from leaktrace.leakage.units import GRANULARITIES
from leaktrace.leakage.verify import VerifySettings
from leaktrace.settings.leakage import RephraseSettings, ScanSlice

# The verifier: the learned one shipped in resources/verify (chosen on
# LessLeak-Bench's human labels, benchmarks/verify_human_labels.py, docs/methods/verification.md);
# `model: null` brings back the rules, whose thresholds are VerifySettings'
# defaults (chosen on generated pairs, benchmarks/verify_devset.py).
# Execution is off unless a scan asks for it.
VERIFY = {
    **{
        key: getattr(VerifySettings, key)
        for key in ("structure", "overlap", "statement", "statement_min_words", "execute")
    },
    "model": "shipped",
}

PRESETS: dict[str, dict] = {
    # Recall-oriented: 32 x 4 bands flag 99.98% of pairs at Jaccard 0.7 and 87% at
    # 0.5; exact verification removes the extra candidates.
    "default": {
        "tokenizer": "code",
        "ngram": 3,
        "num_perm": 128,
        "hash": "rolling64",
        "scheme": "affine32",
        "seed": 1,
        "lsh": {"threshold": 0.5, "false_negative_weight": 0.9, "bands": None, "rows": None},
        "verify": {"jaccard": 0.7, "containment": 0.8, "flag": "shingles", "type3_similarity": 0.8, **VERIFY},
        "granularity": "function",
        "min_tokens": 20,
        # a second channel over identifier-normalised shingles, so renamed copies are candidates (leakage/renamed.py)
        "renamed": True,
        # a benchmark sample (its whole solution, or one of its functions) inside a longer unit: containment of
        # its code 3-grams in one window of the unit at least this (leakage/containment.py); false: off
        "containment_channel": 0.6,
        # the problem text (docstring, statement) in comments, docstrings, notebooks, Markdown or JSON: an input
        # leak (the verifier's statement thresholds make the candidate and the decision)
        "statement_channel": True,
    },
    # LessLeak-Bench's automated step as its released script
    # (minhash_lsh/*/minhash_deduplication.py, run with --ngram_size 2
    # --min_ngram_size 2 --threshold 0.7): re.split("[^A-Za-z_0-9]") tokens,
    # 2-gram shingles (none for a one-token document), SHA-1 (32 bits), the
    # permutations drawn by numpy.random.RandomState(42) as datasketch's legacy
    # scheme draws them with seed 42, 256 permutations, 25 x 10 bands (its
    # optimal_param(0.7, 256)), whole files; a candidate is flagged when the
    # Jaccard of the two texts' token sets (blank tokens dropped) reaches 0.7,
    # containment not used.
    "lessleak": {
        "tokenizer": "lessleak",
        "ngram": 2,
        "num_perm": 256,
        "hash": "sha1",
        "scheme": "legacy",
        "seed": 42,
        "lsh": {"threshold": 0.7, "false_negative_weight": 0.5, "bands": 25, "rows": 10},
        "verify": {"jaccard": 0.7, "containment": None, "flag": "tokens", "type3_similarity": 0.8, **VERIFY},
        "granularity": "file",
        "min_tokens": 1,
        "renamed": False,  # LessLeak's scan has the raw channel only
        "containment_channel": None,
        "statement_channel": False,  # nor these
    },
}


@dataclass(frozen=True)
class ScanSettings:
    name: str
    preset: str
    minhash: MinHashScheme
    bands: int
    rows: int
    verify: VerifySettings
    granularity: str
    min_tokens: int
    max_bytes: int
    huge: str
    language: str
    batch_size: int
    renamed: bool  # the identifier-normalised candidate channel (leakage/renamed.py)
    containment_channel: (
        float | None
    )  # the windowed-containment channel's threshold (leakage/containment.py); None: off
    statement_channel: bool  # the problem-text channel (input leaks)
    rephrase: RephraseSettings  # the rephrase channel (leakage/rephrase.py)

    def describe(self) -> str:
        channels = ", raw and identifier-normalised channels" if self.renamed else ""
        if self.containment_channel is not None:
            channels += f", containment over windows >= {self.containment_channel}"
        if self.statement_channel:
            channels += ", problem-text channel"
        if self.rephrase.enabled:
            channels += f", rephrase channel ({self.rephrase.embedder} embedder, top {self.rephrase.top_k})"
        return f"{self.minhash.describe()}, LSH {self.bands} x {self.rows}{channels}, {self.granularity} granularity"


def resolve(name: str, scan: ScanSlice) -> ScanSettings:
    """Scan ``name``'s settings: its preset, each scheme key of ``scan`` that is not null in its place."""
    preset = PRESETS[scan.preset]

    def pick(key: str, sub: str | None = None):
        if sub is None:
            value = getattr(scan, key)
            return preset[key] if value is None else value
        value = getattr(getattr(scan, key), sub)
        return preset[key][sub] if value is None else value

    try:
        minhash = MinHashScheme(
            tokenizer=pick("tokenizer"),
            ngram=pick("ngram"),
            num_perm=pick("num_perm"),
            hash=pick("hash"),
            scheme=pick("scheme"),
            seed=pick("seed"),
        )
        lsh = scan.lsh
        explicit = lsh.bands is not None or lsh.rows is not None
        threshold_given = lsh.threshold is not None
        bands, rows = choose_bands(
            minhash.num_perm,
            pick("lsh", "threshold"),
            lsh.bands if explicit or threshold_given else preset["lsh"]["bands"],
            lsh.rows if explicit or threshold_given else preset["lsh"]["rows"],
            pick("lsh", "false_negative_weight"),
        )
        verify = VerifySettings(
            minhash.tokenizer, minhash.ngram, **{key: pick("verify", key) for key in preset["verify"]}
        )
        containment_channel = pick("containment_channel")  # null: the preset's; false: off
        if containment_channel is False:
            containment_channel = None
        if containment_channel is not None and (
            isinstance(containment_channel, bool) or not 0 < containment_channel <= 1
        ):
            raise ValueError(
                f"containment_channel must be in (0, 1], false (off) or null (the preset's), got {containment_channel}"
            )
        granularity = pick("granularity")
        if granularity not in GRANULARITIES:
            raise ValueError(f"unknown granularity {granularity!r}; known: {', '.join(GRANULARITIES)}")
    except ValueError as err:
        raise ValueError(f"leakage scan {name!r}: {err}") from None
    rephrase = rephrase_settings(name, scan.rephrase)  # its errors name the scan already
    return ScanSettings(
        name=name,
        preset=scan.preset,
        minhash=minhash,
        bands=bands,
        rows=rows,
        verify=verify,
        granularity=granularity,
        min_tokens=pick("min_tokens"),
        max_bytes=scan.max_bytes,
        huge=scan.huge,
        language=scan.language,
        batch_size=scan.batch_size,
        renamed=bool(pick("renamed")),
        containment_channel=containment_channel,
        statement_channel=bool(pick("statement_channel")),
        rephrase=rephrase,
    )


def resolved(name: str, scan: ScanSlice) -> ScanSettings:
    """:func:`resolve` at a stage's entry: a bad combination of keys is bad input (exit 2) naming the scan."""
    try:
        return resolve(name, scan)
    except ValueError as err:
        raise InputError("leakage settings", name, str(err)) from None


def scan_slice(scan: Mapping, name: str = "scan") -> ScanSlice:
    """The slice a rule passes for a scan configured as ``scan`` (a mapping
    as under ``leakage.scans``, keys left out): the schema's defaults filled
    in, then read as :class:`ScanSlice` (for scripts and tests that scan
    without the pipeline). A key the schema does not have is a ValueError."""
    from leaktrace.configuration import schema_node

    return read_slice(ScanSlice, _with_defaults(schema_node("leakage", "scans", "*"), scan, name), name)


def _with_defaults(node: dict, value: Mapping, where: str) -> dict:
    properties = node.get("properties", {})
    unknown = sorted(set(value) - set(properties))
    if unknown and node.get("additionalProperties") is False:
        raise ValueError(f"config {where}: unknown keys {unknown}; allowed: {', '.join(sorted(properties))}")
    out = dict(value)
    for key, sub in properties.items():
        if key not in out and "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
        if isinstance(out.get(key), Mapping) and "properties" in sub:
            out[key] = _with_defaults(sub, out[key], f"{where}.{key}")
    return out
