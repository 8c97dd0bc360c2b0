package app

// toggleLogin turns "Start at login" on or off (the tray's checkbox).
func (a *App) toggleLogin() {
	on := !startsAtLogin()
	if err := setStartAtLogin(on); err != nil {
		a.log.Warn("start at login", "err", err)
	}
	a.log.Info("start at login", "on", startsAtLogin())
	if a.tray != nil {
		a.tray.showLogin(startsAtLogin())
	}
}
