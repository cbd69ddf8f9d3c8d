"""Benchmarks (not collected by pytest)."""
