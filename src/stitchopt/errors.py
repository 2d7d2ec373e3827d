"""One exception hierarchy. Every message is a single line that says what went wrong and what to do."""


class StitchoptError(Exception):
    """Base class: the CLI prints the message on one line and exits with status 2."""


class ToolchainError(StitchoptError):
    """No usable LLVM, a missing tool, or tools from mixed installations."""


class InputError(StitchoptError):
    """A missing, unreadable, unsupported or malformed input file."""


class PipelineError(StitchoptError):
    """A pass list or pipeline string that `opt` cannot parse, or a pass name we do not know."""


class CacheError(StitchoptError):
    """The evaluation cache cannot be opened or has an incompatible schema."""


class DatasetError(StitchoptError):
    """An unknown benchmark URI or dataset."""
