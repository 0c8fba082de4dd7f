"""The scripts here run as subprocesses, most with a peer's own packages (fastmcp): not test modules."""

collect_ignore_glob = ["*.py"]
