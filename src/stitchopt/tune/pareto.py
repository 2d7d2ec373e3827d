"""Pareto fronts of a finished run, read from its trial log: no evaluation is repeated."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.tune.trial_log import read_trials

METRICS = {
    "size": "size_bytes",
    "compile-time": "compile_seconds",
    "instructions": "ir_instruction_count",
    "perf": "runtime",  # only in runs with a perf objective
    "security": "security",  # only in runs with a security objective: 1 + security-relevant items lost
}


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def pareto_front(trials: list[dict[str, Any]], metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """The trials no other trial beats on every metric (lower is better), one per distinct point."""
    keys = [METRICS[m] for m in metrics]
    points: dict[tuple[float, ...], dict[str, Any]] = {}
    for trial in trials:
        if trial.get("status") != "ok" or any(trial.get(k) is None for k in keys):
            continue
        point = tuple(float(trial[k]) for k in keys)
        if point not in points or len(trial["passes"]) < len(points[point]["passes"]):
            points[point] = trial
    front = [t for p, t in points.items() if not any(_dominates(q, p) for q in points)]
    return sorted(front, key=lambda t: tuple(float(t[k]) for k in keys))


def fronts_from_log(path: Path, metrics: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InputError(f"unknown metric {unknown[0]!r}: use {', '.join(METRICS)}")
    by_program: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for number, trial in enumerate(read_trials(path), 1):
        if not isinstance(trial.get("program"), str):
            raise InputError(f"{path}: trial {number} has no program: not a stitchopt trial log")
        by_program[trial["program"]].append(trial)
    return {program: pareto_front(trials, metrics) for program, trials in by_program.items()}
