"""Work that outlives a request, as jobs: an evaluation result to play and score, a knowledge ingest.

A service declares a ``Task`` (its name, its queue, its typed payload and the function that runs it) and submits
jobs in the same transaction as the rows they concern. An ``Engine`` keeps the jobs and hands each to one worker
at a time: ``leases`` (the embedded default: a table in the store, leases with an owner and an expiry) or
``procrastinate_engine`` (PostgreSQL). ``Jobs`` (``queue``) joins the two: it knows the tasks, runs a worker in
this process when asked, and tells running jobs when their operation was cancelled.
"""
