"""The orchestrators: the only code that ties timing, isolation, correctness and scoring together.

Nothing is imported here: `score` (score.py) must start its zygotes before anything imports torch."""
