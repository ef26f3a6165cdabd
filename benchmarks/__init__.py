"""Benchmarks: speed and quality figures, printed and saved under benchmarks/results/."""
