-- +goose Up
-- The hub's own keys, one per name, shared by every process on the
-- database: the elicitation signing key, the approval page's link key and
-- the HTTP bearer token. Each is made once: the first process to need it
-- inserts it (ON CONFLICT DO NOTHING) and every process reads the row that
-- won, so processes starting together agree.
CREATE TABLE hub_keys (
	name       text PRIMARY KEY,
	value      bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

-- One-time things, spent once across every process (an approval page
-- link, by the SHA-256 of its token): the insert that succeeds spends it.
-- A row is kept until its expiry, after which the thing it spent is
-- refused for having expired anyway.
CREATE TABLE spent (
	purpose    text NOT NULL,
	id         text NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (purpose, id)
);
CREATE INDEX spent_expires_at ON spent (expires_at);

-- +goose Down
DROP TABLE spent;
DROP TABLE hub_keys;
