"""What kind of run a config asks for, and so which benchmarks the testbed
trains on.

A run is an **audit** when it audits models of its own (every
``audit.models`` entry has a path, none reuses a testbed model): it asks
"was this model trained on this benchmark?" and never trains. There a
benchmark becomes a testbed one only where the config says ``testbed: true``,
never because its layout is HumanEval's; elsewhere (the **testbed** and the
other **experiment** runs) a benchmark with ``testbed`` unset is a testbed
one when it is read by HumanEval's reader. The rules (``TESTBED_BENCHMARKS``),
the planning checks and the verdict page's opening text read it from here."""

from __future__ import annotations

from leaktrace.data.benchmarks import benchmark_entry, benchmark_format

AUDIT, TESTBED, EXPERIMENT = "audit", "testbed", "experiment"


def is_audit(config: dict) -> bool:
    """Whether the config audits models of its own and reuses no testbed model."""
    models = config.get("audit", {}).get("models") or []
    return bool(models) and all("testbed" not in spec for spec in models)


def benchmarks_on_testbed(config: dict) -> list[str]:
    """The benchmarks filter, variants, training, scoring and the aggregate
    run on: ``testbed`` where set; unset, those in HumanEval's format, except
    in an audit. A benchmark whose format cannot be told is left out (the
    planning checks name it)."""
    audit = is_audit(config)
    names = []
    for name, settings in config["benchmarks"].items():
        if settings.get("testbed") is not None:
            names += [name] if settings["testbed"] else []
            continue
        try:
            fmt = benchmark_format(benchmark_entry(settings, f"benchmarks.{name}"))
            names += [name] if not audit and fmt == "humaneval" else []
        except ValueError:
            continue
    return names


def run_kind(config: dict) -> str:
    """``audit``, ``testbed`` (a testbed benchmark, no audit of models of its own) or ``experiment``."""
    if is_audit(config):
        return AUDIT
    return TESTBED if benchmarks_on_testbed(config) else EXPERIMENT


def training_notice(config: dict) -> str | None:
    """The planning message of an audit that would train (a benchmark set
    ``testbed: true``), or None."""
    if not is_audit(config):
        return None
    trained = benchmarks_on_testbed(config)
    if not trained:
        return None
    names = ", ".join(trained)
    return (
        f"leaktrace: this audit also trains: benchmarks.{trained[0]}.testbed is true, so the testbed (LoRA runs, "
        f"the complement twin, the control models) runs on {names}. An audit alone needs no training: set "
        "testbed: false (or remove the benchmark with null) to audit without it."
    )
