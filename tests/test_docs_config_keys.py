"""Every config key the documentation names exists: each dotted key in a code
span of the README or a page under docs/ (`contamination.dataset_inference.n_splits`,
`audit.negative_controls`, `leakage.scans.<name>.shards`, `audit.models[].testbed`,
`calibration.models: null`) resolves in config/schema.yaml. A code span counts
as a key when its first word is dotted and its first part is a top-level key
of the schema; file names (`dose.md`, `calibration.parquet`) are left out by
their extension, paths (`results/...`) by their slash."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from repo_copy import REPO

SCHEMA = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
# a dotted key, optionally followed by its value (`calibration.models: null`, `train.epochs=[1, 5]`)
KEY = re.compile(r"^([a-z_][a-z0-9_]*(?:\[\])?(?:\.(?:<[a-z_]+>|[a-z0-9_+-]+)(?:\[\])?)+)(?=$|[:=\s])")
FILE_EXTENSIONS = {
    "md", "parquet", "png", "yaml", "yml", "json", "jsonl", "py", "smk", "tsv", "txt", "html", "rst",
    "gz", "csv", "sh", "log", "toml", "lock", "pt", "safetensors", "bin", "svg", "pdf", "zip", "tar",
}  # fmt: skip


def documents() -> list[Path]:
    docs = REPO / "docs"
    return [REPO / "README.md", *sorted(p for p in docs.rglob("*.md") if "hooks" not in p.relative_to(docs).parts)]


def mentioned_keys(text: str) -> list[tuple[int, str]]:
    """(line, key) of every config key a Markdown text names in a code span
    (code blocks are commands and files, not prose, and are left out)."""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keep the line numbers
    found = []
    for number, line in enumerate(prose.splitlines(), start=1):
        for span in CODE_SPAN.findall(line):
            match = KEY.match(span.strip())
            if not match:
                continue
            key = match.group(1)
            parts = key.split(".")
            if parts[0].removesuffix("[]") not in SCHEMA["properties"] or parts[-1] in FILE_EXTENSIONS:
                continue
            found.append((number, key))
    return found


def _deref(node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        target = SCHEMA
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _children(node: dict, name: str) -> list[dict]:
    """The schema nodes a key named ``name`` can be under ``node``: a declared
    property, an entry of a named collection (``<name>`` or any name), a
    pattern's match; through the alternatives of oneOf/anyOf/allOf, and through
    a list's items (``models[]`` or ``models``)."""
    node = _deref(node)
    found = []
    for combinator in ("oneOf", "anyOf", "allOf"):
        for alternative in node.get(combinator, []):
            found += _children(alternative, name)
    if isinstance(node.get("items"), dict):
        found += _children(node["items"], name)
    if name in node.get("properties", {}):
        found.append(node["properties"][name])
    for pattern, child in node.get("patternProperties", {}).items():
        if name.startswith("<") or re.search(pattern, name):
            found.append(child)
    if isinstance(node.get("additionalProperties"), dict):
        found.append(node["additionalProperties"])
    return found


def resolves(key: str, node: dict = SCHEMA) -> bool:
    """Whether the dotted ``key`` names a key of the schema under ``node``."""
    if not key:
        return True
    first, _, rest = key.partition(".")
    name = first.removesuffix("[]")
    return any(resolves(rest, child) for child in _children(node, name))


def unknown_keys(paths: list[Path]) -> list[str]:
    """``file:line: key`` of every key the documents name that the schema does not have."""
    return [
        f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{line}: `{key}`"
        for path in paths
        for line, key in mentioned_keys(path.read_text())
        if not resolves(key)
    ]


def test_every_config_key_the_docs_name_is_in_the_schema():
    keys = [key for path in documents() for _, key in mentioned_keys(path.read_text())]
    assert len(keys) > 100, "the pattern finds the keys the docs name"
    unknown = unknown_keys(documents())
    assert unknown == [], "config keys the docs name that config/schema.yaml does not have:\n" + "\n".join(unknown)


def test_the_check_reports_a_key_that_does_not_exist(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Decisions at `aggregate.alpha` (a key that never existed), at `calibration.alpha: 0.05`, in\n"
        "`leakage.scans.<name>.shards` and `audit.models[].testbed`; `benchmarks.humaneval.format`.\n"
        "Files are not keys: `dose.md`, `calibration.parquet`, `results/default/verdict.md`, `report.verdict`.\n"
        "```bash\necho `train.nonsense`\n```\n"
        "A typo: `contamination.dataset_inference.n_split`.\n"
    )
    assert [key for _, key in mentioned_keys(page.read_text())] == [
        "aggregate.alpha",
        "calibration.alpha",
        "leakage.scans.<name>.shards",
        "audit.models[].testbed",
        "benchmarks.humaneval.format",
        "contamination.dataset_inference.n_split",
    ]
    assert unknown_keys([page]) == [
        f"{page}:1: `aggregate.alpha`",
        f"{page}:7: `contamination.dataset_inference.n_split`",
    ]
