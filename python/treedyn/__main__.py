"""`python -m treedyn sweep ...` and `python -m treedyn view ...`: the commands of the Python package,
which `treedyn sweep` and `treedyn view` run. Started this way, the functions a sweep's workers run
are the package's own, which they import."""

import sys

if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "sweep":
        from treedyn.sweeps import main
    elif command == "view":
        from treedyn.viewer import main
    else:
        print("usage: python -m treedyn sweep|view ... (python -m treedyn sweep --help)", file=sys.stderr)
        sys.exit(1)
    sys.exit(main(sys.argv[2:]))
