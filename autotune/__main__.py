"""``python -m autotune``: the same command line as the ``autotune`` script."""

from .cli import main

main()
