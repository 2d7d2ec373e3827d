"""Testing pass lists on programs: self-test suites, differential testing, guards and reducers (evidence that a
list is safe, not proof)."""
