"""Benchmark-only studies: code that `benchmarks/` and the tests run to measure the product (objective weights,
seeded search's gain curve, what the security guard costs a size search, the hot-block models), kept out of the
product layers so that nothing the CLI or the library runs depends on it."""
