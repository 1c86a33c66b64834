"""The one error type the report raises for bad input (a missing or malformed file)."""


class ReportError(Exception):
    """Input the report cannot use; the message names the file (and line and field when known).

    The command line prints the message without a traceback and exits with status 1.
    """
