"""Repair: a fixed copy of a draft for chosen engine versions, written safely and proven by the contracts."""
