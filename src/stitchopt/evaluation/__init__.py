"""Evaluation: (IR, pass list) -> object size and status, through one cache, on interchangeable backends
(subprocess, native, Ray)."""
