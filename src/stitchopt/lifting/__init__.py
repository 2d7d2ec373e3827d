"""Lifting: x86-64 assembly back to LLVM IR, judged by round trip; LLM Compiler as an optional backend."""
