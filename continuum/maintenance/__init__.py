"""Weekly maintenance (R30): merge near-duplicates, settle contradictions, compress clusters,
decay importance, prune, archive old summaries and distil `MEMORY.md` — one tenant at a time.

A run first *plans*: it reads one snapshot and produces a list of small steps (the diff),
each naming the rows it touches. `--dry-run` prints that plan and changes nothing; a real
run stores the same plan in `maintenance_runs` and applies it step by step, each step in its
own transaction together with the progress counter — so an interrupted run resumes at the
next step, and every step re-checks its preconditions (a row changed since is left alone).
A tenant runs at most once per ISO week (unless forced), under a Redis lock.

Modules, by job: `rules` (thresholds and the row rules planning and applying share),
`plan` (what a run would do), `apply` (one planned step, in Postgres), `purge` (Redis
traces of deleted memories), `workspace` (`MEMORY.md`) and `run` (the entry point: weekly
runs, resuming, reports).
"""
