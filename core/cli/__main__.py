"""`python -m memplug.cli` runs the command line (handy in subprocess tests)."""

from memplug.cli import main

main()
