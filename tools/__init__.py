"""The repository's maintenance scripts, importable so the tests can check what they keep up to date."""
