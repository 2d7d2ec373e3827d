"""The pipelines that make and judge flag-tuning models (labels, training, judging on held-out programs) and
apply them (static, jit and hybrid modes, cache warming)."""
