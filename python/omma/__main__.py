"""``python -m omma COMMAND ...``: runs the omma command (``omma help``)."""
import os
import sys


def _cli() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(here, "bin", "omma")
    if os.path.isfile(shipped):
        return shipped
    try:
        from . import _build
        if os.path.isfile(_build.CLI):
            return _build.CLI
    except ImportError:
        pass
    raise SystemExit("omma: the omma command is not in this package (build it with CMake)")


def main() -> None:
    cli = _cli()
    env = dict(os.environ)
    if "OMMA_DATA" not in env:
        try:
            from . import _build
            env["OMMA_DATA"] = _build.DATA_DIR
        except ImportError:
            pass
    sys.stdout.flush()
    os.execve(cli, [cli] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
