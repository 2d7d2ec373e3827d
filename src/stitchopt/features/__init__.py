"""Program representations ("experts") of LLVM IR modules: fixed-length feature vectors and token sequences.

Every representation reads an `FeatureModule` (features.module) and returns a numpy array; `features.base` holds the
protocols, the feature standardizer and the cache. Importing this package does no work.
"""
