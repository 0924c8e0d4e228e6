"""Semantics-preserving variants of benchmark programs, and the identifier lexicon they draw names from."""
