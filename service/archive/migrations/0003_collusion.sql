-- What the collusion report reads of each finished hand (service/archive/collusion.py): who
-- was in, what each player won and paid into the pot at its end, and how long after the
-- deal each player declared (seconds; players who let the deadline decide are left out).
ALTER TABLE archive_hands
    ADD COLUMN in_players text[] NOT NULL DEFAULT '{}',
    ADD COLUMN won jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN paid jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN declared_after jsonb NOT NULL DEFAULT '{}';
