package app

import "errors"

// loginSupported: "Start at login" is not built for Windows yet (it would be
// a Run key in the registry, not a file), so the tray leaves it out.
func loginSupported() bool { return false }

var errNoLogin = errors.New(`"Start at login" is not built for Windows yet: add capabilities-desktop to the Startup folder (Win+R, shell:startup)`)

func loginPath() (string, error) { return "", errNoLogin }

func loginEntry() ([]byte, error) { return nil, errNoLogin }
