"""Randomized publication: a benchmark that can prove its own leakage.

Before release, each problem gets K + 1 forms that behave exactly as the
original under its tests (``forms``); one is published per problem, chosen
by a keyed cryptographic draw from a secret the maintainer keeps
(``choice``), and the forms table and the secret are committed to by their
hashes at release time (``commitment``). The release is written in the
input's own layout (``release``). Under any model that never saw the
release, the published form's rank among its problem's forms is uniform,
whatever the forms' naturalness, so p = rank / (K + 1) exactly and the sum
of ranks over problems has a known distribution (``ranks``); re-drawing the
publication over the same scored forms checks that guarantee
(``calibration``)."""
