"""leaktrace: audit code language models for benchmark leakage and memorization."""

__version__ = "0.1.0"
