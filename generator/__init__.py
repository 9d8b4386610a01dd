"""coursepack: exercise and answer packs for a Triton course, rendered, verified and zipped."""

__version__ = "0.1.0"
