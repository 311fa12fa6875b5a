"""pytest-flakegate: `pytest --flakegate=DIR` writes the evidence directory `flakegate check DIR` reads."""

__version__ = "0.1.0"
