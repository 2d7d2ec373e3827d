"""The conventions of `stitchopt.cli.options`, read from every command's declarations (nothing runs): files are
written with -o, a command's main input is an argument, and a shared option is declared alike wherever it is."""

from __future__ import annotations

from typing import Any

EVALUATES = {
    "labels pool",
    "labels search",
    "labels broadcast",
    "labels groups",
    "labels validate",
    "train",
    "optimize",
    "evaluate",
    "eval",
    "demo",
    "tune",
    "broadcast",
    "minimize",
    "cache warm",
    "datasets export",
    "gpu tune",
}
VALIDATES = {"tune", "broadcast", "train", "optimize", "validate", "labels groups", "labels validate"}
RUNS = {"tune", "broadcast", "validate", "optimize", "hot", "gpu transfers", "gpu optimize"}
FAILS_IF_NO_GAIN = {"tune", "broadcast", "optimize"}
FILE_OPTIONS = {"--csv", "--markdown", "--report", "--parquet"}  # files are written with -o, in --format
INPUT_OPTIONS = {"--dataset", "--input", "--file", "--program"}  # a command's main input is an argument


def declared(commands: dict[str, Any], spelling: str) -> dict[str, Any]:
    """The option spelled so, by the commands that have it."""
    return {name: p for name, command in commands.items() for p in command.params if spelling in p.opts}


def test_files_are_written_with_o_and_json_is_a_flag(cli_commands: dict[str, Any]) -> None:
    for name, command in cli_commands.items():
        options = {spelling: p for p in command.params for spelling in p.opts}
        assert "--json" not in options or options["--json"].is_flag, name
        assert not FILE_OPTIONS & set(options), name
        assert "--output" not in options or options["--output"] is options.get("-o"), name
        assert "-o" not in options or options["-o"].callback is not None, name  # checked before any work
        assert "--format" not in options or "-o" in options, name


def test_main_inputs_are_arguments(cli_commands: dict[str, Any]) -> None:
    taken = {name: INPUT_OPTIONS & {s for p in c.params for s in p.opts} for name, c in cli_commands.items()}
    assert {name: spellings for name, spellings in taken.items() if spellings} == {}


def _alike(options: dict[str, Any]) -> bool:
    """Declared once: the same spellings, kind, type and help wherever the option is."""
    return len({(tuple(p.opts), p.multiple, p.type_descriptor.annotation, p.help) for p in options.values()}) == 1


def test_shared_options_are_declared_alike(cli_commands: dict[str, Any]) -> None:
    validate = declared(cli_commands, "--validate")
    assert set(validate) == VALIDATES and _alike(validate)
    assert validate["tune"].multiple and validate["tune"].type_descriptor.annotation == list[str]
    limit = declared(cli_commands, "--validate-limit")
    assert set(limit) == VALIDATES and _alike(limit)
    run = declared(cli_commands, "--run")
    assert set(run) == RUNS
    assert all(not p.is_flag and not p.multiple and p.type_descriptor.annotation is str for p in run.values())
    for spelling in ("--jobs", "--cache-dir", "--llvm"):
        assert set(declared(cli_commands, spelling)) >= EVALUATES, spelling
    for spelling in ("--backend", "--address"):  # anywhere else they would be ignored
        options = declared(cli_commands, spelling)
        assert set(options) == EVALUATES and _alike(options), spelling
    gain = declared(cli_commands, "--fail-if-no-gain")
    assert set(gain) == FAILS_IF_NO_GAIN and _alike(gain) and gain["tune"].is_flag
    passes = declared(cli_commands, "--passes")
    assert set(passes) == {"eval", "validate", "minimize", "security check", "gpu measure", "gpu transfers"}
    assert {(tuple(sorted(p.opts)), p.type_descriptor.annotation) for p in passes.values()} == {
        (("--passes", "-p"), str)
    }
    k = declared(cli_commands, "--k")  # one meaning: the lists jit mode compiles (train's coreset is --coreset-size)
    assert set(k) == {"optimize", "demo", "cache warm", "gpu optimize"} and _alike(k)


# Times and shares whose range needs a finite float above 0 (or 0 and more): checked in the command's body
# (`options.require_positive` and its kin), since typer's ranges cannot exclude 0 or NaN.
CHECKED_IN_THE_BODY = {
    ("tune", "--seconds"),
    ("tune", "--screen-margin"),
    ("validate", "--run-timeout"),
    ("eval", "--timeout"),
}


def test_every_number_option_has_a_range(cli_commands: dict[str, Any]) -> None:
    """`--top 0` printed nothing and `--top -1` all lists but one: a number nobody meant is a usage error."""
    unchecked = {
        (name, p.opts[0])
        for name, command in cli_commands.items()
        for p in command.params
        if p.type_descriptor.annotation in (int, float) and p.min is None and p.max is None
    }
    assert unchecked == CHECKED_IN_THE_BODY
