"""Model builds are configured by environment variables (a build passes no options through `make CC=...`):
each bad value is one line that says what to use, and everything that decides an object is in the cache key."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitchopt.apply.modes import MODES
from stitchopt.cc.settings import BuildSettings
from stitchopt.errors import InputError
from stitchopt.models.shipped import DEFAULT_MODEL_DIR


def _settings(**env: str) -> BuildSettings | None:
    return BuildSettings.from_env(env, DEFAULT_MODEL_DIR)


def test_builds_are_off_unless_a_model_a_list_or_a_mode_is_set() -> None:
    assert _settings() is None
    assert _settings(STITCHOPT_BUILD_LOG="log.jsonl") is None
    static = _settings(STITCHOPT_MODEL="default")
    assert static is not None and static.model == DEFAULT_MODEL_DIR and static.mode == "static"
    jit = _settings(STITCHOPT_MODE="jit", STITCHOPT_K="3")
    assert jit is not None and jit.model == DEFAULT_MODEL_DIR and jit.k == 3
    tune = _settings(STITCHOPT_MODE="tune", STITCHOPT_BUDGET="40", STITCHOPT_VALIDATE_LIMIT="5")
    assert tune is not None and tune.model == DEFAULT_MODEL_DIR and (tune.budget, tune.validate_limit) == (40, 5)
    search = _settings(STITCHOPT_MODE="search")
    # the defaults of the one mode table, which `stitchopt optimize` reads too
    assert search is not None and (search.k, search.budget) == (MODES["search"].k, MODES["search"].budget)
    small = _settings(STITCHOPT_MODE="search", STITCHOPT_BUDGET="9", STITCHOPT_K="2")
    assert tune.k == MODES["tune"].k and small == BuildSettings(DEFAULT_MODEL_DIR, None, "search", 2, 9)
    fixed = _settings(STITCHOPT_LIST="sroa,instcombine", STITCHOPT_BUILD_LOG="b.jsonl")
    assert fixed is not None and fixed.pass_list == "sroa,instcombine" and fixed.log == Path("b.jsonl").absolute()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STITCHOPT_MODE": "fast"}, "use one of static, jit, tune, search"),
        ({"STITCHOPT_MODEL": "default", "STITCHOPT_K": "0"}, "STITCHOPT_K='0': use a positive whole number"),
        ({"STITCHOPT_MODE": "tune", "STITCHOPT_BUDGET": "lots"}, "STITCHOPT_BUDGET='lots'"),
        ({"STITCHOPT_MODEL": "/no/such/model"}, "not a model directory"),
        ({"STITCHOPT_MODEL": "default", "STITCHOPT_LIST": "sroa"}, "not both"),
        ({"STITCHOPT_LIST": "sroa", "STITCHOPT_MODE": "jit"}, "leave STITCHOPT_MODE unset"),
        ({"STITCHOPT_MODE": "jit", "STITCHOPT_OBJECTIVE": "security=1"}, "other modes follow the model"),
        ({"STITCHOPT_MODE": "tune", "STITCHOPT_OBJECTIVE": "safety=1"}, "unknown objective term 'safety'"),
        ({"STITCHOPT_MODE": "tune", "STITCHOPT_OBJECTIVE": "size=1,perf=1"}, "drop the perf term"),
    ],
)
def test_bad_settings_say_what_to_use(env: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        _settings(**env)


def test_identity_changes_with_what_decides_the_objects(tmp_path: Path) -> None:
    def identity(**env: str) -> str:
        settings = _settings(**env)
        assert settings is not None
        return settings.identity

    base = identity(STITCHOPT_MODEL="default")
    assert base == identity(STITCHOPT_MODEL="default", STITCHOPT_K="9")  # k is for the other modes
    assert identity(STITCHOPT_MODE="search", STITCHOPT_VALIDATE_LIMIT="3") == identity(STITCHOPT_MODE="search")
    secure = _settings(STITCHOPT_MODE="tune", STITCHOPT_OBJECTIVE="size=0.3,security=0.7")
    assert secure is not None and str(secure.objective) == "size=0.3,security=0.7"
    assert secure.identity != identity(STITCHOPT_MODE="tune")
    assert base == identity(STITCHOPT_MODEL="default", STITCHOPT_BUILD_LOG="x")
    different = {
        identity(STITCHOPT_MODE="jit"),
        identity(STITCHOPT_MODE="jit", STITCHOPT_K="2"),
        identity(STITCHOPT_MODE="tune"),
        identity(STITCHOPT_MODE="tune", STITCHOPT_BUDGET="7"),
        identity(STITCHOPT_MODE="tune", STITCHOPT_K="2"),
        identity(STITCHOPT_MODE="search"),
        identity(STITCHOPT_MODE="search", STITCHOPT_BUDGET="7"),
        identity(STITCHOPT_MODE="search", STITCHOPT_K="2"),
        identity(STITCHOPT_LIST="sroa"),
    }
    assert base not in different and len(different) == 9
    copy = tmp_path / "model"
    copy.mkdir()
    for path in DEFAULT_MODEL_DIR.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    assert identity(STITCHOPT_MODEL=str(copy)) == base  # the same model elsewhere
    (copy / "config.json").write_text((copy / "config.json").read_text().replace("{", "{ ", 1))
    assert identity(STITCHOPT_MODEL=str(copy)) != base
