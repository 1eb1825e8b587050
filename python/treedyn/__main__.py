"""`python -m treedyn sweep ...`: the sweep command (treedyn.sweeps.main), which `treedyn sweep`
runs. Started this way, the functions the workers run are the package's own, which they import."""

import sys

from treedyn.sweeps import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "sweep":
        print("usage: python -m treedyn sweep MODEL ... (python -m treedyn sweep --help)", file=sys.stderr)
        sys.exit(1)
    sys.exit(main(sys.argv[2:]))
