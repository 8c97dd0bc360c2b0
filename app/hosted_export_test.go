package app

// LoginSecrets is where the app reads hub login's tokens (for the desktop
// session's scenarios, package app_test).
var LoginSecrets = loginSecrets
