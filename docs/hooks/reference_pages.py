"""The documentation site's two generated pages, made at build time by this
mkdocs hook (``hooks:`` in mkdocs.yml), so neither can fall behind the code:

- ``configuration.md``: every key of ``config/schema.yaml`` with its type,
  default and description, nested keys, named entries and list items
  included;
- ``artifact-schemas.md``: every pyarrow schema a stage writes its Parquet
  tables with, column by column.

The schemas are read from the source with ``ast`` and only their
expressions are evaluated (``pa.schema([...])`` and the module constants they
use): importing the stage modules would import PyTorch, tens of seconds on a
loaded machine, for a build that should take seconds.
``tests/test_docs.py`` checks that both pages cover everything."""

from __future__ import annotations

import ast
import builtins
import html
import importlib
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema.yaml"
PACKAGE = REPO / "workflow" / "leaktrace"
CONFIG_PAGE = "configuration.md"
ARTIFACTS_PAGE = "artifact-schemas.md"


# -- the configuration reference ---------------------------------------------


@dataclass(frozen=True)
class Key:
    """One row of the reference: a key's dotted path (``<name>`` for an
    entry of a named collection, ``[]`` for a list item), the JSON pointers
    of its definitions in the schema, and what the reader needs."""

    path: str
    pointers: tuple[str, ...]
    type: str
    default: str
    description: str


def _resolve(schema: dict, ref: str) -> dict:
    node = schema
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _anchor(ref: str) -> str:
    return "def-" + ref.removeprefix("#/").replace("/", "-").replace("$defs-", "").replace("_", "-").lower()


def _definition_title(ref: str) -> str:
    return (
        ref.removeprefix("#/")
        .removeprefix("$defs/")
        .replace("/properties/", ".")
        .replace("/additionalProperties", ".<name>")
    )


def _code(value: object) -> str:
    return f"`{value}`" if value is not None else "`null`"


def _bounds(node: dict) -> str:
    marks = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in node:
            marks.append(f"{sign} {node[key]}")
    if "minItems" in node and node["minItems"] > 0:
        marks.append(f"at least {node['minItems']} item{'s' if node['minItems'] > 1 else ''}")
    if "maxItems" in node:
        marks.append(f"at most {node['maxItems']}")
    if node.get("uniqueItems"):
        marks.append("distinct")
    if "pattern" in node:
        marks.append(f"matching `{node['pattern']}`")
    return f" ({', '.join(marks)})" if marks else ""


def _reference_text(ref: str, schema: dict) -> str:
    """A shared definition with keys of its own: a link to its section; a
    plain type: the type itself; another key's value: that key's path."""
    if not ref.startswith("#/$defs/"):
        return (
            "as `"
            + ref.removeprefix("#/properties/").replace("/properties/", ".").replace("/additionalProperties", ".<name>")
            + "`"
        )
    target = _resolve(schema, ref)
    if "properties" in target:
        return f"[{_definition_title(ref)}](#{_anchor(ref)})"
    return type_text(target, schema)


def type_text(node: dict, schema: dict) -> str:
    """What a value may be, in words: types, choices, bounds, a link for a shared definition."""
    if "$ref" in node:
        return _reference_text(node["$ref"], schema)
    if "enum" in node:
        return "one of " + ", ".join(_code(v) for v in node["enum"])
    if "const" in node:
        return _code(node["const"])
    if "oneOf" in node and not any("properties" in alt or "required" in alt for alt in node["oneOf"]):
        return " or ".join(type_text(alt, schema) for alt in node["oneOf"])
    types = node.get("type", "object")
    parts = []
    for kind in types if isinstance(types, list) else [types]:
        if kind == "array":
            items = node.get("items", {})
            if "properties" in items or "oneOf" in items:
                parts.append("list")
            elif "enum" in items:  # each item one of these
                parts.append("list of " + ", ".join(_code(v) for v in items["enum"]))
            else:
                parts.append(f"list of {type_text(items, schema)}")
        elif kind == "object":
            parts.append("mapping")
        elif kind == "null":
            parts.append("`null`")
        else:
            parts.append(kind)
    return " or ".join(parts) + _bounds(node)


def _default_text(node: dict, required: bool) -> str:
    if "default" in node:
        return (
            "`"
            + yaml.safe_dump(node["default"], default_flow_style=True, width=10_000).strip().removesuffix("\n...")
            + "`"
        )
    return "required" if required else "unset"


def _merge(node: dict, schema: dict) -> dict:
    """A node with its ``$ref`` target's description, when it has none of its own."""
    if "$ref" in node and "description" not in node:
        target = _resolve(schema, node["$ref"])
        if "description" in target:
            return {**node, "description": target["description"]}
    return node


def walk(schema: dict, node: dict, path: str, pointer: str, required: bool = False) -> list[Key]:
    """The key at ``path`` and everything under it. A shared definition
    (``$ref``) is linked, not expanded: its keys are listed once, in its own section."""
    node = _merge(node, schema)
    rows = (
        [Key(path, (pointer,), type_text(node, schema), _default_text(node, required), node.get("description", ""))]
        if path
        else []
    )
    if "$ref" in node:
        return rows
    rows += _children(schema, node, path, pointer)
    return rows


def _children(schema: dict, node: dict, path: str, pointer: str) -> list[Key]:
    rows: list[Key] = []
    prefix = f"{path}." if path else ""
    for name, child in node.get("properties", {}).items():
        rows += walk(schema, child, prefix + name, f"{pointer}/properties/{name}", name in node.get("required", []))
    entries = node.get("additionalProperties")
    if isinstance(entries, dict):
        rows += walk(schema, entries, f"{prefix}<name>", f"{pointer}/additionalProperties")
    items = node.get("items")
    if isinstance(items, dict) and ("properties" in items or "oneOf" in items):
        rows += _alternatives(schema, items, f"{path}[]", f"{pointer}/items")
    return rows


def _alternatives(schema: dict, items: dict, path: str, pointer: str) -> list[Key]:
    """A list item that is one of several mappings: their keys, merged by
    name (a key in two alternatives is one row with both definitions). A key
    is marked required only where every alternative requires it; the
    conditions say which keys each alternative needs."""
    if "oneOf" not in items:
        return _children(schema, items, path, pointer)
    merged: dict[str, Key] = {}
    required_in: dict[str, int] = {}
    for i, alternative in enumerate(items["oneOf"]):
        for row in _children(schema, alternative, path, f"{pointer}/oneOf/{i}"):
            name = row.path.removeprefix(f"{path}.")
            required_in[row.path] = required_in.get(row.path, 0) + (name in alternative.get("required", []))
            if row.path in merged:
                first = merged[row.path]
                merged[row.path] = Key(
                    row.path,
                    first.pointers + row.pointers,
                    first.type,
                    first.default,
                    first.description or row.description,
                )
            else:
                merged[row.path] = row
    everywhere = len(items["oneOf"])
    return [
        row
        if row.default != "required" or required_in[row.path] == everywhere
        else Key(row.path, row.pointers, row.type, "unset", row.description)
        for row in merged.values()
    ]


def _conditions(node: dict) -> list[str]:
    """``oneOf`` of required keys and ``if``/``then`` requirements, in words."""
    notes = []
    for alternative in node.get("oneOf", []):
        if "required" in alternative:
            notes.append(" and ".join(f"`{k}`" for k in alternative["required"]))
    lines = [f"exactly one of: {'; or '.join(notes)}"] if notes else []
    clauses = [node] if "if" in node else []
    clauses += [c for c in node.get("allOf", []) if "if" in c]
    for clause in clauses:
        ((key, test),) = clause["if"]["properties"].items()
        value = test.get("const", test.get("enum"))
        needs = ", ".join(f"`{k}`" for k in clause["then"].get("required", []) if k not in clause["if"]["properties"])
        condition = f"is `{value}`" if "const" in test else "is one of " + ", ".join(f"`{v}`" for v in value)
        lines.append(f"where `{key}` {condition}: {needs} required")
    return lines


def _escape(text: str) -> str:
    """Markdown table cell text: HTML and emphasis characters escaped outside code spans."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = html.escape(parts[i], quote=False).replace("*", r"\*").replace("|", r"\|").replace("_", r"\_")
    return "`".join(parts)


def _pipes(text: str) -> str:
    """Pipes escaped outside code spans (the table extension leaves those inside alone)."""
    parts = text.split("`")
    return "`".join(p.replace("|", r"\|") if i % 2 == 0 else p for i, p in enumerate(parts))


def _table(rows: list[Key]) -> list[str]:
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    for row in rows:
        lines.append(f"| `{row.path}` | {_pipes(row.type)} | {_pipes(row.default)} | {_escape(row.description)} |")
    return lines


def _condition_notes(schema: dict, node: dict, path: str) -> list[str]:
    """Conditions of a block and of the named entries and items under it."""
    notes = [f"- `{path}`: {line}" for line in _conditions(node)]
    for name, child in node.get("properties", {}).items():
        if "$ref" not in child:
            notes += _condition_notes(schema, child, f"{path}.{name}")
    entries = node.get("additionalProperties")
    if isinstance(entries, dict):
        notes += _condition_notes(schema, entries, f"{path}.<name>")
    if isinstance(node.get("items"), dict):
        notes += _condition_notes(schema, node["items"], f"{path}[]")
    return notes


def config_keys(schema: dict) -> dict[str, list[Key]]:
    """Section title -> its rows: the top-level scalar keys, then each
    top-level block, then each shared definition."""
    sections: dict[str, list[Key]] = {"top-level keys": []}
    for name, node in schema["properties"].items():
        rows = walk(schema, node, name, f"/properties/{name}", name in schema.get("required", []))
        if len(rows) == 1 and "$ref" not in node:
            sections["top-level keys"] += rows
        else:
            sections[name] = rows
    for name, node in schema.get("$defs", {}).items():
        if "properties" in node:
            sections[f"#/$defs/{name}"] = _children(schema, node, name, f"/$defs/{name}")
    return sections


def _uses(schema: dict, ref: str) -> list[str]:
    """The keys whose value is the shared definition ``ref``."""
    found = []

    def visit(node: object, path: str) -> None:
        if isinstance(node, dict):
            if node.get("$ref") == ref:
                found.append(path)
                return
            for name, child in node.get("properties", {}).items():
                visit(child, f"{path}.{name}".lstrip("."))
            if isinstance(node.get("additionalProperties"), dict):
                visit(node["additionalProperties"], f"{path}.<name>")
            if isinstance(node.get("items"), dict):
                visit(node["items"], f"{path}[]")

    visit(schema, "")
    return found


def configuration_page(schema_path: Path = SCHEMA) -> str:
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    out = [
        "# Configuration reference",
        "",
        "Every key leaktrace reads, generated from `config/schema.yaml` when the site is built, so it is as current as",
        "the schema. `config/config.yaml` is the embedded default, commented key by key; the Snakefile validates every",
        "config against the schema before it plans anything, so an unknown key or a wrong type stops the run with a",
        "message that names it, and keys left out take the defaults below.",
        "",
        "A `--configfile` is laid over `config/config.yaml`: mappings key by key, lists and single values whole. In the",
        "named collections (`benchmarks`, `corpora`, `score.methods`, `leakage.scans`, `leakage.clean`) an entry set to",
        "`null` removes the default's entry. `<name>` in a key stands for an entry's name, `[]` for an item of a list.",
        "A default of *unset* means the key is absent unless given; what then applies is in its description.",
        "",
    ]
    for title, rows in config_keys(schema).items():
        if title.startswith("#/"):
            continue
        node = schema["properties"].get(title, {})
        out += [f"## {title}", ""] + _table(rows) + [""]
        notes = _condition_notes(schema, node, title) if title in schema["properties"] else []
        if notes:
            out += ["Conditions:", "", *notes, ""]
    out += ["## Shared definitions", "", "Blocks that appear under several keys, listed once.", ""]
    for title, rows in config_keys(schema).items():
        if not title.startswith("#/"):
            continue
        ref = title
        node = _resolve(schema, ref)
        used = ", ".join(f"`{u}`" for u in _uses(schema, ref))
        out += [f"### {_definition_title(ref)} {{#{_anchor(ref)}}}", ""]
        if node.get("description"):
            out += [_escape(node["description"]).rstrip(".") + ".", ""]
        out += [f"Used by {used}." if used else "", ""]
        out += _table(rows) + [""]
        notes = [f"- {line}" for line in _conditions(node)]
        if notes:
            out += ["Conditions:", "", *notes, ""]
    return "\n".join(out).rstrip() + "\n"


# -- the artifact schemas -----------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    note: str  # the comment beside the column in the source, if any


@dataclass(frozen=True)
class ArtifactSchema:
    module: str  # dotted, e.g. leaktrace.stages.score
    name: str  # e.g. SCORES_SCHEMA
    columns: tuple[Column, ...]


class _Constants:
    """Module-level names of one module of the package, evaluated from its
    source on demand: an assignment by its expression, a name imported from
    the package by that module's own source in turn, anything else (a class,
    a library) by importing it. So a schema costs the imports it really needs
    (pyarrow, dataclasses), not those of the module that defines it."""

    _modules: dict[str, _Constants] = {}

    def __init__(self, module: str):
        self.module = module
        self.source = (PACKAGE.parent / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        self.tree = ast.parse(self.source)
        self.values: dict[str, object] = {}

    @classmethod
    def of(cls, module: str) -> _Constants:
        if module not in cls._modules:
            cls._modules[module] = cls(module)
        return cls._modules[module]

    def assignment(self, name: str) -> ast.expr | None:
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node.value
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                return node.value
        return None

    def imported(self, name: str) -> object:
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return _attribute(node.module, alias.name)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        return _module(alias.name if alias.asname else name)
        return getattr(importlib.import_module(self.module), name)  # a class or function of the module itself

    def value(self, name: str) -> object:
        if name not in self.values:
            expression = self.assignment(name)
            self.values[name] = self.evaluate(expression) if expression is not None else self.imported(name)
        return self.values[name]

    def evaluate(self, expression: ast.expr) -> object:
        names = {n.id for n in ast.walk(expression) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        bound = {
            t.id
            for c in ast.walk(expression)
            if isinstance(c, ast.comprehension)
            for t in ast.walk(c.target)
            if isinstance(t, ast.Name)
        }
        scope = {name: self.value(name) for name in sorted(names - bound) if name not in vars(builtins)}
        return eval(compile(ast.Expression(expression), f"<{self.module}>", "eval"), scope)  # noqa: S307 (the repository's own source)


def _in_package(module: str) -> bool:
    return module == PACKAGE.name or module.startswith(PACKAGE.name + ".")


def _is_module(module: str) -> bool:
    return (PACKAGE.parent / (module.replace(".", "/") + ".py")).is_file()


class _LazyModule:
    """A module of the package whose attributes are read as ``_Constants`` reads names."""

    def __init__(self, module: str):
        self._constants = _Constants.of(module)

    def __getattr__(self, name: str) -> object:
        return self._constants.value(name)


def _module(module: str) -> object:
    return _LazyModule(module) if _in_package(module) and _is_module(module) else importlib.import_module(module)


def _attribute(module: str, name: str) -> object:
    if _in_package(module) and _is_module(f"{module}.{name}"):
        return _LazyModule(f"{module}.{name}")  # a submodule
    if _in_package(module) and _is_module(module):
        return _Constants.of(module).value(name)
    return getattr(importlib.import_module(module), name)


def _comments(source: str) -> dict[int, str]:
    return {
        tok.start[0]: tok.string.lstrip("# ").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }


def _column_notes(call: ast.Call, comments: dict[int, str]) -> dict[str, str]:
    """Column -> the comment on its line, where the column is the only one written on that line."""
    fields = call.args[0] if call.args else None
    if not isinstance(fields, ast.List):
        return {}
    literal = [e for e in fields.elts if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant)]
    per_line: dict[int, list[str]] = {}
    for element in literal:
        per_line.setdefault(element.end_lineno, []).append(element.elts[0].value)
    return {names[0]: comments[line] for line, names in per_line.items() if len(names) == 1 and line in comments}


def _is_schema_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "schema"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "pa"
    )


def artifact_schemas(package: Path = PACKAGE) -> list[ArtifactSchema]:
    """Every module-level ``NAME = pa.schema(...)`` of the package, evaluated."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assignments = [
            (t.id, node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and _is_schema_call(node.value)
            for t in node.targets
            if isinstance(t, ast.Name)
        ]
        if not assignments:
            continue
        constants = _Constants.of(module)
        comments = _comments(constants.source)
        for name, call in assignments:
            schema = constants.value(name)
            notes = _column_notes(call, comments)
            found.append(
                ArtifactSchema(module, name, tuple(Column(f.name, str(f.type), notes.get(f.name, "")) for f in schema))
            )
    return found


def _module_summary(module: str) -> str:
    """The first paragraph of the module's docstring, reStructuredText literals as Markdown code."""
    docstring = ast.get_docstring(_Constants.of(module).tree) or ""
    return docstring.split("\n\n")[0].replace("\n", " ").replace("``", "`")


def artifacts_page(package: Path = PACKAGE) -> str:
    schemas = artifact_schemas(package)
    out = [
        "# Artifact schemas",
        "",
        "Every Parquet table the pipeline writes goes through `leaktrace.artifacts.write_table` with one of these",
        "explicit pyarrow schemas (zstd, no statistics, so the same rows give the same bytes). This page is generated",
        "from the source when the site is built; which file each schema is written to is in",
        "[Architecture](architecture.md#stages-and-their-artifacts). A note beside a column is the comment the code",
        "has there. The one JSON file, `results/<run>/verdict.json`, has its JSON Schema in",
        "[verdict.schema.json](verdict.schema.json).",
        "",
    ]
    for module in sorted({s.module for s in schemas}):
        out += [f"## `{module}`", "", _escape(_module_summary(module)), ""]
        for schema in (s for s in schemas if s.module == module):
            out += [
                f"### `{schema.name}` {{#{schema.name.lower().replace('_', '-')}-{module.rsplit('.', 1)[-1].replace('_', '-')}}}",
                "",
                "| column | type | note |",
                "| --- | --- | --- |",
            ]
            out += [f"| `{c.name}` | `{c.type}` | {_escape(c.note)} |" for c in schema.columns]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


# -- the mkdocs hook ----------------------------------------------------------


def on_files(files, config):
    """Add the two generated pages to the site's files (mkdocs >= 1.6)."""
    from mkdocs.structure.files import File

    for name, content in ((CONFIG_PAGE, configuration_page()), (ARTIFACTS_PAGE, artifacts_page())):
        files.append(File.generated(config, name, content=content))
    return files


if __name__ == "__main__":  # print both pages, to read them without building the site
    print(configuration_page())
    print(artifacts_page())
