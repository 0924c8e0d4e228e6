"""The detector families' parameter defaults are written once, in
config/schema.yaml (score.methods.<family>): the registry reads them from
there, and re-stating one in code fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

import leaktrace.detect.registry as registry
from leaktrace.configuration import schema_node
from leaktrace.detect.registry import FAMILIES, REQUIRED, family_defaults, family_params

REPO = Path(__file__).resolve().parents[1]
METHODS = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())["properties"]["score"]["properties"]["methods"][
    "properties"
]


def test_every_family_is_in_the_schema_and_every_schema_family_is_registered():
    assert sorted(FAMILIES) == sorted(METHODS)


@pytest.mark.parametrize("family", sorted(METHODS))
def test_each_parameter_has_a_schema_default_or_is_required(family):
    node = METHODS[family]
    required = set(node.get("required", ()))
    lacking = [p for p, spec in node.get("properties", {}).items() if "default" not in spec and p not in required]
    assert lacking == [], f"score.methods.{family}: parameters with no default in config/schema.yaml: {lacking}"


@pytest.mark.parametrize("family", sorted(METHODS))
def test_the_registry_defaults_are_the_schema_defaults(family):
    properties = METHODS[family].get("properties", {})
    expected = {p: spec["default"] if "default" in spec else REQUIRED for p, spec in properties.items()}
    assert family_defaults(family) == expected
    assert FAMILIES[family].stage_only <= set(properties), "stage_only names a parameter the schema lacks"


def test_the_hand_written_defaults_of_two_families():
    assert family_defaults("min_k") == {"ratios": [0.2, 0.3]}
    assert family_defaults("dc_pdd") == {"corpus": REQUIRED, "clip": 0.01}
    assert family_params("srdetection_blackbox", {"ngram": 5})["ngram"] == 5
    assert family_params("srdetection_blackbox", {})["ngram"] == 7


def test_a_required_parameter_left_out_and_an_unknown_one_are_clear_errors():
    with pytest.raises(ValueError, match=r"dc_pdd: missing required parameters \['corpus'\]"):
        family_params("dc_pdd", {})
    with pytest.raises(ValueError, match=r"min_k: unknown parameters \['ratio'\]; known: \['ratios'\]"):
        family_params("min_k", {"ratio": [0.1]})
    with pytest.raises(ValueError, match="unknown detection methods"):
        family_defaults("min_q")


def test_defaults_are_a_fresh_copy_each_call():
    first = family_params("min_k", {})
    first["ratios"].append(0.9)
    assert family_params("min_k", {})["ratios"] == [0.2, 0.3]


def test_a_schema_parameter_without_default_is_a_clear_error(monkeypatch):
    node = {"type": "object", "properties": {"ratios": {"type": "array"}}}
    monkeypatch.setattr(registry, "schema_node", lambda *keys: node)
    with pytest.raises(
        ValueError, match=r"score\.methods\.min_k\.ratios has neither a default nor a place in required"
    ):
        registry._schema_defaults.__wrapped__("min_k")


def test_schema_node_names_a_key_the_schema_lacks():
    assert schema_node("score", "methods", "neighbor")["properties"]["n_neighbors"]["default"] == 10
    with pytest.raises(KeyError, match=r"no key score\.methods\.nope"):
        schema_node("score", "methods", "nope", "deeper")


def _constant(node: ast.expr) -> bool:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_constant(e) for e in node.elts)
    return isinstance(node, ast.Constant)


def test_the_registry_source_restates_no_default():
    """No ``Family(...)`` takes a defaults mapping, and no dict literal in
    detect/registry.py maps a family's parameter to a constant value."""
    tree = ast.parse((REPO / "workflow" / "leaktrace" / "detect" / "registry.py").read_text())
    parameters = {p for node in METHODS.values() for p in node.get("properties", {})}
    restated = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Family":
            extra = [k.arg for k in node.keywords if k.arg not in ("stage_only", "label_fitted")]
            if len(node.args) > 1 or extra:
                given = [ast.unparse(a) for a in node.args[1:]] + extra
                restated.append(f"line {node.lineno}: Family(...) given {', '.join(given)}")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in parameters and _constant(value):
                    restated.append(f"line {node.lineno}: {key.value!r}: {ast.unparse(value)}")
    assert restated == [], "defaults written in code as well as in config/schema.yaml:\n" + "\n".join(restated)
