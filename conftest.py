"""Repository-level pytest configuration.

Kept free of ``pytest_plugins`` and heavy imports: with an editable install the contracts folder
lives in this repository, so this file is also seen when users run the contracts from elsewhere.
"""

collect_ignore = ["benchmarks", "examples"]
