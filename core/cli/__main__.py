"""`python -m memplug.cli` runs the command line as the `memplug` command does (handy in
subprocess tests), its exit status standing against a late Ctrl-C (memplug._exitstatus)."""

from memplug import _exitstatus

_exitstatus.install()

from memplug.cli import main  # noqa: E402  (after install: see memplug._exitstatus)

_exitstatus.run(main)
