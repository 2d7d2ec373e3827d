"""stitchopt: choose LLVM optimization pass lists that make programs smaller and faster."""

__version__ = "0.1.0"
