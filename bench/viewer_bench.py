"""The viewer on a big run (issue 27's target): a 1024-body spherical chain simulated for 10 s
(dca, its defaults), its viewer.html written (default budget 30 MB), then opened in headless
Chromium (Debian's, software WebGL: SwiftShader) over the DevTools protocol:

  size    of viewer.html
  write   seconds `treedyn view` takes
  open    seconds from navigating to the file until the page says it is ready
  fps     frames per second while playing, from requestAnimationFrame timestamps over 5 s

    PYTHONPATH=build/python python3 bench/viewer_bench.py [BODIES] [T_END] [all]

`all`: the run writes every sample (--max-output-mb 0), so the page holds as many as its budget allows.
"""

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from browser import Browser  # noqa: E402

BINARY = os.path.join(ROOT, "build", "treedyn")


def main():
    bodies = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    t_end = sys.argv[2] if len(sys.argv) > 2 else "10"
    with tempfile.TemporaryDirectory() as d:
        model, out = os.path.join(d, "chain.json"), os.path.join(d, "run")
        subprocess.run([BINARY, "generate", "chain", "--bodies", str(bodies), "-o", model], check=True, capture_output=True)
        start = time.perf_counter()
        every = ["--max-output-mb", "0"] if "all" in sys.argv[3:] else []
        subprocess.run([BINARY, "simulate", model, "-f", "dca", "--t-end", t_end, "-o", out, "-q", *every], check=True)
        print(f"simulate: {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        subprocess.run([BINARY, "view", out], check=True, capture_output=True)
        write = time.perf_counter() - start
        page = os.path.join(out, "viewer.html")
        print(f"view: {write:.2f} s to write {os.path.getsize(page) / 1e6:.1f} MB")
        browser = Browser(1280, 800)
        try:
            opened = browser.open(page)
            frames = len(browser.evaluate("treedyn.frameTimes()"))
            fps = browser.evaluate("treedyn.measureFps(5000)", await_promise=True)
            print(f"open: {opened:.2f} s ({frames} frames kept); playing: {fps['fps']:.1f} frames/s "
                  f"({fps['frames']} frames in {fps['elapsed']:.1f} s); errors: {browser.errors or 'none'}")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
