"""SrDetection, gray-box (SrDetection paper, Sec. 3.3): a sample is flagged as
leaked iff the perplexity of its original form is lower than that of every one
of its n semantics-preserving variants. Threshold-free.

For threshold-free evaluation (AUC) the continuous score is the log-perplexity
gap min_i log PPL(variant_i) - log PPL(original) = min_i loss_i - loss_0: it is
positive exactly when the sample is flagged, and, unlike a raw PPL difference,
comparable between easy and hard samples.

Orientation: higher = member."""

from leaktrace.detect.evidence import SampleEvidence, log_likelihood


def srdetection_gap(evidence: SampleEvidence, n_variants: int) -> float:
    variants = evidence.variants[:n_variants]
    if not variants:
        raise ValueError(f"{evidence.sample_id}: SrDetection needs at least one valid variant")
    original_loss = -log_likelihood(evidence.original)
    return min(-log_likelihood(v) for v in variants) - original_loss


def srdetection_flag(evidence: SampleEvidence, n_variants: int) -> bool:
    return srdetection_gap(evidence, n_variants) > 0
