"""Rendering of aggregate results: Markdown tables and PNG plots."""
