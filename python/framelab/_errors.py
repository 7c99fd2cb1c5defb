"""The exceptions of the package: each message is one line saying what is wrong and what to do."""


class FramelabError(Exception):
    """Anything framelab could not do; the message is the one line framelab printed."""


class FileError(FramelabError, ValueError):
    """A file that is not a readable framelab run file (not one at all, newer, truncated, damaged)."""


class BinaryNotFound(FramelabError, FileNotFoundError):
    """The `framelab` program is neither at $FRAMELAB_BIN nor on PATH."""


class RunFailed(FramelabError):
    """`framelab` exited with an error. `exit_code` is its status (1 could not do it, 2 usage,
    3 the measured command failed or the recording is incomplete), `stderr` all it printed,
    and `report` the parsed report when it printed one (exit 3 still measures)."""

    def __init__(self, message, exit_code, stderr="", report=None, path=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.report = report
        self.path = path
