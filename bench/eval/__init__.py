"""`make eval`: retrieval quality on real long conversations (the LoCoMo dev split).

Each conversation is written as OpenClaw transcripts, synced into a fresh database and
drained through real Celery workers, as a new user's would be; then every scored question
is asked of search (default and messages-only) and of the context block, beside BM25, dense
and hybrid baselines over the same turns. Scored per question against the evidence turns.
"""
