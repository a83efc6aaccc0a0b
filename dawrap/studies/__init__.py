"""Comparing samplers on one release (:mod:`.compare`) and simulation-based calibration
(:mod:`.calibration`, its results and verdict in :mod:`.calibration_results`, with its bands,
plots, executors and the resumable trial log)."""
