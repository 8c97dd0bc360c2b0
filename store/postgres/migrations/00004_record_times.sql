-- +goose Up
-- When each record was last written (the database's clock), with an index
-- by time: the prune of old runs reads only the runs it may delete, oldest
-- first, instead of every run record and journal (postgres.Store.Oldest).
-- A record written before this migration counts as written now.
ALTER TABLE records ADD COLUMN written_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX records_written ON records (tenant, kind, written_at, id);

-- +goose Down
DROP INDEX records_written;
ALTER TABLE records DROP COLUMN written_at;
