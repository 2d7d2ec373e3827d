"""Proof that a pass list does not break programs: self-test suites, differential testing, guards, reducers."""
