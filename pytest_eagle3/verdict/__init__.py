"""One verdict pipeline: checkpoint x engine version x target side -> a frozen verdict (measure, judge,
settle, predict). Every command and every contract asks it; nothing else builds a load plan."""

from pytest_eagle3.verdict.pipeline import Pipeline, TargetSide, Verdict, VerdictSettings, predict_acceptance, verdict

__all__ = ["Pipeline", "TargetSide", "Verdict", "VerdictSettings", "predict_acceptance", "verdict"]
