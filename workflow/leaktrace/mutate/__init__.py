"""CodeSnitch's clone-type mutations (T1 formatting, T2a/T2b renaming, T3 statements, Hybrid)."""
