-- The archive: the tables' logs copied out of Redis, event by event, with their hash chain,
-- and one row per finished hand for auditors' searches (service/archive/archive.py).

-- How far each table's log is archived: `version` and the hash of the event at it (`head`),
-- so the next events must chain from it; `open_hand`, the hand dealt and not yet over
-- (its number, first version, deal time and players), which its end completes.
CREATE TABLE archive_tables (
    table_id   text PRIMARY KEY,
    tenant     text NOT NULL,
    version    bigint NOT NULL DEFAULT 0,
    head       text NOT NULL,
    open_hand  jsonb
);

-- The events exactly as Redis stored them (the bytes their hashes cover).
CREATE TABLE archive_events (
    table_id  text NOT NULL,
    version   bigint NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (table_id, version)
);

-- One row per finished (resolved or voided) hand.
CREATE TABLE archive_hands (
    seq            bigserial UNIQUE,
    tenant         text NOT NULL,
    table_id       text NOT NULL,
    hand           integer NOT NULL,
    first_version  bigint NOT NULL,
    last_version   bigint NOT NULL,
    started_at     timestamptz NOT NULL,
    ended_at       timestamptz NOT NULL,
    players        text[] NOT NULL,
    winners        text[] NOT NULL,
    outcome        text NOT NULL,
    pot            bigint NOT NULL,
    rake           bigint NOT NULL,
    PRIMARY KEY (table_id, hand)
);
CREATE INDEX archive_hands_newest ON archive_hands (tenant, ended_at DESC, seq DESC);
CREATE INDEX archive_hands_players ON archive_hands USING gin (players);
