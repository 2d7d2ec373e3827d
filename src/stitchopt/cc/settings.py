"""What a model build does, read from the environment of `stitchopt-cc` (a build passes no options through
`make CC=...`): which model or list, which mode, its budget, and where the build log goes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from stitchopt.apply.modes import BUILD_MODES, MODES, RANKED_K, TUNE_BUDGET, default_k, mode_named
from stitchopt.core import Objective
from stitchopt.errors import InputError

MODEL_ENV = "STITCHOPT_MODEL"  # a flag-tuning model directory, or `default` for the shipped one
LIST_ENV = "STITCHOPT_LIST"  # one pass list for every unit (e.g. a broadcast answer), instead of a model
MODE_ENV = "STITCHOPT_MODE"
K_ENV = "STITCHOPT_K"
BUDGET_ENV = "STITCHOPT_BUDGET"
VALIDATE_LIMIT_ENV = "STITCHOPT_VALIDATE_LIMIT"
LOG_ENV = "STITCHOPT_BUILD_LOG"
OBJECTIVE_ENV = "STITCHOPT_OBJECTIVE"  # what tune builds minimize (size, instructions, compile-time, security)
DEFAULT_MODEL = "default"


@dataclass(frozen=True)
class BuildSettings:
    """`model` is a directory (None with a fixed `pass_list`); `k` is for jit, and for tune and search (the lists
    that seed their search); `budget` for tune and search; `validate_limit` for tune."""

    model: Path | None
    pass_list: str | None
    mode: str = "static"
    k: int = RANKED_K
    budget: int = TUNE_BUDGET
    validate_limit: int | None = None
    log: Path | None = None
    objective: Objective = Objective()

    @classmethod
    def from_env(cls, env: Mapping[str, str], default_model: Path) -> BuildSettings | None:
        """None when model builds are off (neither STITCHOPT_MODEL, STITCHOPT_LIST nor STITCHOPT_MODE=tune)."""
        mode = env.get(MODE_ENV, "static").strip() or "static"
        budget = mode_named(mode, BUILD_MODES, setting=MODE_ENV).budget or TUNE_BUDGET  # unused unless it searches
        model_name = env.get(MODEL_ENV, "").strip()
        pass_list = env.get(LIST_ENV, "").strip() or None
        if not model_name and pass_list is None and MODE_ENV not in env:
            return None
        if model_name and pass_list is not None:
            raise InputError(f"set {MODEL_ENV} or {LIST_ENV}, not both")
        if pass_list is not None and mode != "static":
            raise InputError(f"{LIST_ENV} builds every unit with that list: leave {MODE_ENV} unset")
        model = None
        if pass_list is None or model_name:
            model = default_model if model_name in ("", DEFAULT_MODEL) else Path(model_name)
            if not (model / "config.json").is_file():
                raise InputError(f"{MODEL_ENV}={model_name}: not a model directory (no config.json); use `default`")
        log = env.get(LOG_ENV, "").strip()
        objective = _objective(env, mode)
        return cls(
            model,
            pass_list,
            mode,
            _positive(env, K_ENV) or default_k(mode),
            _positive(env, BUDGET_ENV) or budget,
            _positive(env, VALIDATE_LIMIT_ENV),
            Path(log).absolute() if log else None,
            objective,
        )

    @cached_property
    def identity(self) -> str:
        """What decides the objects of a build besides the unit and the toolchain: part of the object cache key."""
        digest = hashlib.sha256()
        if self.model is not None:
            for path in sorted(self.model.iterdir()):
                if path.is_file():
                    digest.update(path.name.encode() + b"\0" + path.read_bytes())
        choices = (self.pass_list, self.mode, self.k if self.mode != "static" else None)
        search = (self.budget, *((self.validate_limit, str(self.objective)) if self.mode == "tune" else ()))
        digest.update(repr((choices, search if MODES[self.mode].searches else None)).encode())
        return digest.hexdigest()


def _positive(env: Mapping[str, str], name: str) -> int | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{name}={text!r}: use a positive whole number")
    return int(text)


def _objective(env: Mapping[str, str], mode: str) -> Objective:
    """STITCHOPT_OBJECTIVE for tune builds; refused elsewhere (the other modes follow the model) and for perf
    (a build does not run its units)."""
    text = env.get(OBJECTIVE_ENV, "").strip()
    if not text:
        return Objective()
    if mode != "tune":
        raise InputError(f"{OBJECTIVE_ENV} is what STITCHOPT_MODE=tune searches for; other modes follow the model")
    try:
        objective = Objective.parse(text)
    except ValueError as exc:
        raise InputError(f"{OBJECTIVE_ENV}={text!r}: {exc}") from exc
    if objective.needs_runtime:
        raise InputError(f"{OBJECTIVE_ENV}={text!r}: a build does not run its units; drop the perf term")
    return objective
