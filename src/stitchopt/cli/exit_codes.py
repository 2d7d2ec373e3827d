"""The `stitchopt` command's exit statuses and its Ctrl-C line. Nothing is imported here, so the entry point
knows them before it loads the commands."""

SUCCESS, NEGATIVE, USER_ERROR, INTERNAL_ERROR, INTERRUPTED = 0, 1, 2, 3, 130
INTERRUPTED_LINE = "stitchopt: interrupted"  # on stderr, whenever a run ends by Ctrl-C (or SIGTERM)
