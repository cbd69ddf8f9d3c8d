"""The archive in PostgreSQL: the tables' logs copied out of Redis, verified and trimmed from
it, and the finished hands auditors search (`archive`); the schema and its migrations
(`database`)."""
