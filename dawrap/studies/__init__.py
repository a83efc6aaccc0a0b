"""Comparing samplers on one release (:mod:`.compare`) and simulation-based calibration
(:mod:`.calibration`, with its bands, plots, executors and the resumable trial log)."""
