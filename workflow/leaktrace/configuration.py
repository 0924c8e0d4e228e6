"""How an experiment file (``--configfile``) lays over ``config/config.yaml``.

Snakemake merges mappings key by key and replaces lists and scalars whole.
leaktrace keeps that and adds one rule for the mappings whose keys name what
a run builds (``NAMED_COLLECTIONS``): an entry set to ``null`` in the overlay
removes the default's entry. So an experiment file adds an entry by naming a
new key, changes one by naming its keys, and drops one with ``null``.
Collections whose entries are only meaningful together (the models an audit
compares, the epochs, ratios and seeds trained) are lists, so an overlay
replaces them whole and never inherits a model it does not build.

``config/schema.yaml`` is where every key's default lives (Snakemake fills
them into the config before any rule reads it); :func:`schema_node` and
:func:`schema_defaults` give library code the same defaults (the detector
registry's parameters, a benchmark's settings) so no default is written twice."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"

NAMED_COLLECTIONS = (
    ("benchmarks",),
    ("corpora",),
    ("score", "methods"),
    ("leakage", "scans"),
    ("leakage", "clean"),
    ("counterfactual", "sources"),
)


@cache
def _schema() -> dict:
    import yaml

    with open(SCHEMA_PATH) as handle:  # libyaml's loader where installed: the same mapping, ten times faster
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def schema_node(*keys: str) -> dict[str, Any]:
    """A copy of the schema of the config key ``keys`` (``"score", "methods",
    "min_k"``: ``score.methods.min_k``), found through each level's
    ``properties``; ``"*"`` is any entry of a named collection (its
    ``additionalProperties``: ``"benchmarks", "*", "limit"``). A key the
    schema does not have is a KeyError naming it."""
    node = _schema()
    for depth, key in enumerate(keys):
        try:
            node = node["additionalProperties"] if key == "*" else node["properties"][key]
        except KeyError:
            raise KeyError(f"config/schema.yaml has no key {'.'.join(keys[: depth + 1])}") from None
    return copy.deepcopy(node)


def _defaults(node: dict) -> Any:
    if node.get("type") == "object" and "properties" in node:
        return {key: _defaults(child) for key, child in node["properties"].items()}
    return node.get("default")


def schema_defaults(*keys: str) -> Any:
    """What a config that sets nothing under ``keys`` holds there once the
    schema's defaults are filled in (an object's keys each at its default):
    the settings of a library caller outside the pipeline (benchmarks, tests)."""
    return _defaults(schema_node(*keys))


def drop_removed_entries(config: dict) -> list[str]:
    """Delete, in place, every entry of a named collection whose value is
    None; return their dotted names (for the log)."""
    removed = []
    for path in NAMED_COLLECTIONS:
        collection = config
        for key in path:
            collection = collection.get(key) if isinstance(collection, dict) else None
        if not isinstance(collection, dict):
            continue
        for name in [name for name, value in collection.items() if value is None]:
            del collection[name]
            removed.append(".".join((*path, name)))
    return removed


def schema_error_message(error) -> str:
    """One or two lines for a config that fails ``config/schema.yaml``: the
    offending key's dotted path, what is wrong, and the allowed values or
    keys where the schema lists them (never the whole schema, which is what
    jsonschema's own message prints)."""
    from jsonschema.exceptions import best_match

    forms = ""
    while error.validator in ("oneOf", "anyOf", "allOf") and error.context:
        branches = error.validator_value if isinstance(error.validator_value, list) else []
        if error.validator != "allOf" and branches and all(isinstance(b, dict) and "properties" in b for b in branches):
            forms = "; the allowed forms: " + " or ".join("{" + ", ".join(b["properties"]) + "}" for b in branches)
        error = best_match(error.context)
    where = ".".join(str(p) for p in error.absolute_path) or "the config"
    schema = error.schema if isinstance(error.schema, dict) else {}
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in schema.get("properties", {}))
        return f"config {where}: unknown key {', '.join(map(repr, extra))}" + (
            forms or f"; allowed keys: {', '.join(allowed)}"
        )
    if error.validator == "minProperties":
        entry = schema.get("additionalProperties")
        keys = sorted(entry.get("properties", {})) if isinstance(entry, dict) else []
        shape = f" (each a name mapped to {{{', '.join(keys)}}})" if keys else ""
        return (
            f"config {where}: is empty; it needs at least {error.validator_value} entr"
            f"{'y' if error.validator_value == 1 else 'ies'}{shape}. Was every entry removed (set to null)?"
        )
    if error.validator == "enum":
        allowed = ", ".join("null" if v is None else str(v) for v in error.validator_value)
        return f"config {where}: {error.instance!r} is not allowed; allowed values: {allowed}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"config {where}: missing key {', '.join(map(repr, missing))} (required: {', '.join(error.validator_value)}){forms}"
    description = schema.get("description")
    return f"config {where}: {message}" + (f"\n  ({where}: {description})" if description else "")


def validate_config(config: dict, schema: str, validate) -> None:
    """``validate`` (Snakemake's, which fills the schema's defaults) on
    ``config``; a failure is a ValueError of :func:`schema_error_message`
    (Snakemake's own error prints the whole schema)."""
    import copy

    import yaml
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    original = copy.deepcopy(config)
    try:
        validate(config, schema=schema, set_default=True)
    except Exception:
        with open(schema) as handle:
            loaded = yaml.safe_load(handle)
        error = best_match(validator_for(loaded)(loaded).iter_errors(original))
        if error is None:
            raise
        raise ValueError(schema_error_message(error)) from None
    imply_benchmark_formats(config)


def imply_benchmark_formats(config: dict) -> None:
    """Each benchmark's ``format`` where the config leaves it null: the one
    its preset and file imply (``data.benchmarks.benchmark_format``), so the
    rules (which benchmarks the testbed runs on, how a release is written)
    see the reader the ingest uses."""
    from leaktrace.data.benchmarks import benchmark_entry, benchmark_format

    for name, settings in (config.get("benchmarks") or {}).items():
        if isinstance(settings, dict):
            entry = benchmark_entry(settings, f"benchmarks.{name}")  # a mistyped key: a SliceError naming it
            try:
                settings["format"] = benchmark_format(entry)
            except ValueError as err:
                raise ValueError(f"config benchmarks.{name}: {err}") from None
