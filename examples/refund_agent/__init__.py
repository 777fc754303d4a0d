"""A customer-support agent that files refunds, graded by otel-traj while it runs.

``python -m examples.refund_agent`` (what ``make demo`` runs) replays seven support tickets through a
hand-instrumented agent: real tool functions over an in-memory billing backend, a scripted planner in
place of the language model, and OpenTelemetry GenAI spans recorded through the OpenTelemetry API with
``TrajectoryProcessor`` attached. Every run ends with a confident answer; the trajectory shows which
ones got there by an acceptable path.
"""
