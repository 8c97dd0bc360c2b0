package hub

// SandboxReady reports whether the sandbox has been built (Prepare builds it
// at start), so that an execute needs no start-up of its own: a server's
// readiness probe (serve --http's /readyz) answers 503 until it is.
func (h *Hub) SandboxReady() bool {
	return h.runs.driver.Load() != nil
}
