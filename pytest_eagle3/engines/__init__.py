"""What each engine version does with a draft, as data (profiles with sources), and the load plan computed from it."""
