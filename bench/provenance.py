"""The provenance header of bench/header.sh for the Python bench scripts: command line, UTC date,
git revision, kernel and load average, as comment lines ("# ") or one HTML comment (md=True,
for Markdown tables). `import provenance` works from bench/ (the script's own directory is first
on sys.path)."""
import os
import subprocess
import sys

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "header.sh")


def header(md=False, argv=None):
    argv = sys.argv if argv is None else argv
    args = [HEADER] + (["--md"] if md else []) + ["--"] + list(argv)
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def print_header(md=False, file=None):
    print(header(md), end="", file=file or sys.stdout, flush=True)
