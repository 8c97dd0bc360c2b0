//go:build darwin && !cgo

package app

import "errors"

// tray is absent from this build: fyne.io/systray needs cgo on macOS.
type tray struct{}

func startTray(chan<- func(), *App) (*tray, error) {
	return nil, errors.New("this build has no tray: on macOS it needs cgo (build with CGO_ENABLED=1)")
}

func (*tray) end()            {}
func (*tray) update(trayView) {}
func (*tray) showLogin(bool)  {}
