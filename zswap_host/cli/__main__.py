"""``python -m zswap_host.cli``: the command, as the console script runs it."""

from . import main

if __name__ == "__main__":
    main()
