//go:build !linux

package testenv

import "testing"

// Nginx is an nginx a test started; the tests start one on Linux only.
type Nginx struct {
	Bin, Dir string
	Port     int
}

// StartNginx skips the test: the tests run nginx on Linux only.
func StartNginx(t testing.TB, site func(port int) string) *Nginx {
	t.Helper()
	t.Skip("the nginx tests run on Linux only (scripts/setup.sh --tests installs nginx there)")
	return nil
}

func (n *Nginx) Stop(t testing.TB) {}
func (n *Nginx) Logs() string      { return "" }
func (n *Nginx) AccessLog() string { return "" }
func (n *Nginx) URL() string       { return "" }
