"""For users' own tests: synthetic (and deliberately faulty) checkpoints, and Hypothesis strategies."""
