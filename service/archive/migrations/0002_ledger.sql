-- The ledger in the archive: with PostgreSQL, the archive derives the ledger's entries from
-- each batch of events it archives, in the same transaction (service/archive/archive.py), so
-- Redis keeps none of them; `book` is what the ledger carries from one batch to the next.
-- `kind` and `at` are the entry's, for the players' 24 h net loss (their loss limits).
ALTER TABLE archive_tables ADD COLUMN book jsonb;

CREATE TABLE ledger_entries (
    seq        bigserial PRIMARY KEY,
    tenant     text NOT NULL,
    table_id   text NOT NULL,
    player_id  text,
    kind       text NOT NULL,
    amount     bigint NOT NULL,
    at         timestamptz NOT NULL,
    entry      jsonb NOT NULL
);
CREATE INDEX ledger_entries_tenant ON ledger_entries (tenant, seq);
CREATE INDEX ledger_entries_table ON ledger_entries (tenant, table_id, seq);
CREATE INDEX ledger_entries_player ON ledger_entries (tenant, player_id, seq);
CREATE INDEX ledger_entries_losses ON ledger_entries (tenant, player_id, at);
