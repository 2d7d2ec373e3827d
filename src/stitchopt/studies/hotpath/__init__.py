"""The hot-path study: the corpus of profiled programs, the LSTM's training and the boosted-tree baseline
(`benchmarks/hot_paths.py`); the product's side (profiles, labels, the shipped model) is `stitchopt.hotpath`."""
