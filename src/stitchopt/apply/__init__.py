"""Applying a flag-tuning model to one unit: the modes (static, jit, search, hybrid, tune), their defaults in
one table (`modes`), and the one entry `stitchopt optimize` calls (`optimize`); `stitchopt-cc` reads the same
table."""
