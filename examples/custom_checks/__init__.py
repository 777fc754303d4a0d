"""Custom checks and a golden-case argument matcher for the refund agent (see docs/extending.md)."""
