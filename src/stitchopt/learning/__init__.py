"""The pipelines that make and judge flag-tuning models (labels, training, evaluation) and apply them (static,
jit and hybrid modes, cache warming)."""
