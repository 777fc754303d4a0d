"""LLM judges: scores a model gives a sample of graded runs, after their verdicts and apart from them.

Nothing is imported here: ``otel_traj.sinks.base`` reads ``judge.result`` and must stay light.
"""
