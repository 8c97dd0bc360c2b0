package app

// For the desktop session's scenarios (package app_test).
var (
	HostedWithAuth = hostedWithAuth
	Consent        = consent
)

// LoginSecrets is where the app reads hub login's tokens.
var LoginSecrets = loginSecrets
