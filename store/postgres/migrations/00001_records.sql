-- +goose Up
-- Every record kind of the hub (store.Kinds) in one table, named by kind
-- and id; the data is the record's JSON as the file store writes it, kept
-- as bytes so that a record that cannot be decoded is still stored and
-- reported as corrupt (store.CorruptError), as on disk.
CREATE TABLE records (
	kind text NOT NULL,
	id   text NOT NULL,
	data bytea NOT NULL,
	PRIMARY KEY (kind, id)
);

-- The records' logs (a run's journal): one row a line, in the order of seq.
CREATE TABLE log_lines (
	kind text NOT NULL,
	id   text NOT NULL,
	seq  bigint GENERATED ALWAYS AS IDENTITY,
	line bytea NOT NULL,
	PRIMARY KEY (kind, id, seq)
);

-- Claims (store.Store.Hold): a lease a live process renews; one that has
-- expired is anybody's.
CREATE TABLE holds (
	kind       text NOT NULL,
	id         text NOT NULL,
	owner      text NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (kind, id)
);

-- The store's generation (store.Generationer): bumped in the same statement
-- as every write of a source, manifest, connection, policy or profile.
CREATE TABLE generation (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	n   bigint NOT NULL
);
INSERT INTO generation (one, n) VALUES (true, 0);

-- +goose Down
DROP TABLE generation;
DROP TABLE holds;
DROP TABLE log_lines;
DROP TABLE records;
