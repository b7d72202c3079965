"""Engine-independent diagnoses: a checkpoint in, findings out (shapes, the vocab map, weights)."""
