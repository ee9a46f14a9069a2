"""Published training runs, re-predicted with the engine (see README.md)."""
