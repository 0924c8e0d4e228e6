"""Ref, reference-model calibration (Carlini et al., USENIX Security 2021;
CodeSnitch Sec. 2.2): the target model's log-likelihood of a text minus that
of a reference model (a smaller or earlier model not exposed to the
candidates), which removes how easy the text is for any model of its kind.

score = LL_target(x) - LL_reference(x), LL = mean token log-probability, each
under its own model's tokenisation (so a reference with another tokenizer
gives per-token means over different token sequences, as in the papers).

Orientation: a member is easier for the target than for the reference, so
higher = member.

The reference an audit can have is another model (smaller, or an earlier
checkpoint). In the testbed the target's own base model, the exact model
before fine-tuning, is also at hand: Ref against it (``ref_oracle``) is a
best case that no real audit reaches, reported and labelled as the oracle."""

from __future__ import annotations

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def ref_score(evidence: SampleEvidence) -> float:
    if evidence.reference is None:
        raise ValueError(f"{evidence.sample_id}: the ref method needs the text scored under the reference model")
    return log_likelihood(evidence.original) - log_likelihood(evidence.reference)


def ref_oracle_score(evidence: SampleEvidence) -> float:
    if evidence.oracle_reference is None:
        raise ValueError(
            f"{evidence.sample_id}: the ref_oracle method needs the text scored under the target's base model"
        )
    return log_likelihood(evidence.original) - log_likelihood(evidence.oracle_reference)
