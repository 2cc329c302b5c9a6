"""The ephemeral layer (R1–R5, R44) in Redis: minutes-to-hours state that expires by itself.

Per tenant (every key starts `continuum:{namespace}:`, `keys`):
- `turns`: what a turn leaves behind: the session registry per channel (TTL 1 h, refreshed by
  activity), the current topic per channel (TTL 30 min), the recent-message buffer per channel
  (last 10, TTL 2 h), the per-session transcript buffer (sorted by event time, 30-minute
  window, ≤ 200 turns) and the memory keys stored during the session — never written to
  Postgres;
- `sessions`: reading the registry (active sessions, topics) and the global idle index (last
  activity per session) the server-side idle sweep walks;
- `handoff`: a user's switch of channels (TTL 10 min, announced on pub/sub, read once);
- `notify`: memory-change announcements on pub/sub (R43);
- `erase`: finding and deleting a forgotten user's state.

Every write is idempotent (sorted sets keyed by message id, scored by event time), so a
redelivered turn changes nothing. For an encrypted tenant (R47) topics, buffer entries and
handoffs are stored sealed under the user's data key; buffer entries deterministically, so a
redelivered turn still re-adds the same member.
"""
