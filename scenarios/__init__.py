"""Scenario modules: one per question the harness answers (``python bench.py --list``)."""
