"""Development and demo: embedded Postgres + Redis, `make demo`, sample conversations."""
