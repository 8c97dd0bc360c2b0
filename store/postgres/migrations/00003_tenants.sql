-- +goose Up
-- Tenants (the hosted hub: one per signed-in account, on one database).
-- Every table of the hub's store gets a tenant column, first in its
-- primary key, so that every statement of a tenant's store view
-- (postgres.Store.Tenant) names it and an index serves it. The local or
-- shared hub is tenant '' (what every row before this migration becomes).
ALTER TABLE records ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE records DROP CONSTRAINT records_pkey;
ALTER TABLE records ADD PRIMARY KEY (tenant, kind, id);

ALTER TABLE log_lines ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE log_lines DROP CONSTRAINT log_lines_pkey;
ALTER TABLE log_lines ADD PRIMARY KEY (tenant, kind, id, seq);

ALTER TABLE holds ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE holds DROP CONSTRAINT holds_pkey;
ALTER TABLE holds ADD PRIMARY KEY (tenant, kind, id);

-- The generation: one row a tenant, made by its tenant's first write that
-- bumps it (a tenant with no row is at 0).
ALTER TABLE generation ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE generation DROP CONSTRAINT generation_pkey;
ALTER TABLE generation DROP COLUMN one;
ALTER TABLE generation ADD PRIMARY KEY (tenant);

ALTER TABLE hub_keys ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE hub_keys DROP CONSTRAINT hub_keys_pkey;
ALTER TABLE hub_keys ADD PRIMARY KEY (tenant, name);

ALTER TABLE spent ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE spent DROP CONSTRAINT spent_pkey;
ALTER TABLE spent ADD PRIMARY KEY (tenant, purpose, id);

-- The hosted hub's OAuth authorization server (engine/authserver/pgstore):
-- clients, codes and tokens, the codes and tokens by their SHA-256 only.
-- A code's or token's tenant is the account that granted it.
CREATE TABLE oauth_clients (
	id            text PRIMARY KEY,
	secret_hash   text NOT NULL,
	auth_method   text NOT NULL,
	name          text NOT NULL,
	redirect_uris text[] NOT NULL,
	scope         text NOT NULL,
	created       timestamptz NOT NULL
);
CREATE TABLE oauth_codes (
	hash         text PRIMARY KEY,
	client_id    text NOT NULL,
	tenant       text NOT NULL,
	redirect_uri text NOT NULL,
	resource     text NOT NULL,
	scope        text NOT NULL,
	challenge    text NOT NULL,
	family       text NOT NULL,
	expires      timestamptz NOT NULL,
	used         boolean NOT NULL DEFAULT false
);
CREATE TABLE oauth_tokens (
	hash      text PRIMARY KEY,
	kind      text NOT NULL,
	client_id text NOT NULL,
	tenant    text NOT NULL,
	resource  text NOT NULL,
	scope     text NOT NULL,
	family    text NOT NULL,
	expires   timestamptz NOT NULL,
	used      boolean NOT NULL DEFAULT false,
	revoked   boolean NOT NULL DEFAULT false
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family);
CREATE TABLE oauth_revoked_families (family text PRIMARY KEY);

-- The hosted hub's sign-in (engine/identity/pgstore): browser sessions, by
-- the SHA-256 of their id (the cookie carries the id), and the sign-in
-- states already used (a callback is not replayed).
CREATE TABLE identity_sessions (
	id_hash    bytea PRIMARY KEY,
	tenant     text NOT NULL,
	issuer     text NOT NULL,
	subject    text NOT NULL,
	name       text NOT NULL,
	email      text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX identity_sessions_expires_at ON identity_sessions (expires_at);
CREATE TABLE identity_states (
	state_hash bytea PRIMARY KEY,
	expires_at timestamptz NOT NULL
);
CREATE INDEX identity_states_expires_at ON identity_states (expires_at);

-- +goose Down
DROP TABLE identity_states;
DROP TABLE identity_sessions;
DROP TABLE oauth_revoked_families;
DROP TABLE oauth_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_clients;

-- A schema without tenants holds only tenant '': the others' rows go.
DELETE FROM spent WHERE tenant <> '';
ALTER TABLE spent DROP CONSTRAINT spent_pkey;
ALTER TABLE spent DROP COLUMN tenant;
ALTER TABLE spent ADD PRIMARY KEY (purpose, id);

DELETE FROM hub_keys WHERE tenant <> '';
ALTER TABLE hub_keys DROP CONSTRAINT hub_keys_pkey;
ALTER TABLE hub_keys DROP COLUMN tenant;
ALTER TABLE hub_keys ADD PRIMARY KEY (name);

DELETE FROM generation WHERE tenant <> '';
INSERT INTO generation (tenant, n) VALUES ('', 0) ON CONFLICT (tenant) DO NOTHING;
ALTER TABLE generation DROP CONSTRAINT generation_pkey;
ALTER TABLE generation ADD COLUMN one boolean NOT NULL DEFAULT true CHECK (one);
ALTER TABLE generation DROP COLUMN tenant;
ALTER TABLE generation ADD PRIMARY KEY (one);

DELETE FROM holds WHERE tenant <> '';
ALTER TABLE holds DROP CONSTRAINT holds_pkey;
ALTER TABLE holds DROP COLUMN tenant;
ALTER TABLE holds ADD PRIMARY KEY (kind, id);

DELETE FROM log_lines WHERE tenant <> '';
ALTER TABLE log_lines DROP CONSTRAINT log_lines_pkey;
ALTER TABLE log_lines DROP COLUMN tenant;
ALTER TABLE log_lines ADD PRIMARY KEY (kind, id, seq);

DELETE FROM records WHERE tenant <> '';
ALTER TABLE records DROP CONSTRAINT records_pkey;
ALTER TABLE records DROP COLUMN tenant;
ALTER TABLE records ADD PRIMARY KEY (kind, id);
