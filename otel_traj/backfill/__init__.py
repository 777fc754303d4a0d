"""``otel-traj backfill``: grade runs already stored in a tracing backend and write the scores back.

``http`` reads politely (a bounded request rate, 429 and ``Retry-After`` honoured, 5xx retried),
``langfuse`` lists a project's traces and their observations through Langfuse's public API,
``cursor`` keeps the newest trace graded per project in the store, ``run`` rebuilds, grades and
delivers through the offline path (``otel_traj.offline``).
"""
