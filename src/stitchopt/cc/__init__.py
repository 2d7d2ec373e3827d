"""Build integration: the compiler wrapper (`stitchopt-cc`) and the model-driven rebuild of each object."""
