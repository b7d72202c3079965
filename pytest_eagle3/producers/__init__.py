"""What each producer (speculators, SpecForge, EAGLE, ModelOpt, AngelSlim) writes: formats and habits."""
