"""ensclust: run, compare and reproduce ensemble (consensus) clustering methods."""

__version__ = "0.1.0"
