package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/store"
)

// SettingsFile, in the store directory, holds the person's settings of the
// hub's desktop side (the console's Settings screen writes it).
const SettingsFile = "settings.json"

// Settings are the person's settings. The zero value is the default.
type Settings struct {
	// RaiseApprovals brings the approval window to the front (taking the
	// focus) when a call waits. Off: a notification asks, and a window the
	// app opens by itself (no notification daemon) comes up minimised.
	RaiseApprovals bool `json:"raiseApprovals"`
}

func (h *Hub) settingsPath() (string, error) {
	d, ok := h.store.(dirStore)
	if !ok {
		return "", errors.New("this hub's store is not a directory; it keeps no settings")
	}
	return filepath.Join(d.Dir(), SettingsFile), nil
}

// Settings reads the person's settings (the defaults when there is no
// file).
func (h *Hub) Settings() (Settings, error) {
	var s Settings
	p, err := h.settingsPath()
	if err != nil {
		return s, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading the settings: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Settings{}, fmt.Errorf("reading the settings in %s: %w (fix the JSON, or delete the file for the defaults)", p, err)
	}
	return s, nil
}

// SetSettings writes the person's settings (atomically, mode 600).
func (h *Hub) SetSettings(s Settings) error {
	p, err := h.settingsPath()
	if err != nil {
		return fmt.Errorf("writing the settings: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the settings: %w", err)
	}
	if err := store.WriteFileAtomic(p, append(b, '\n')); err != nil {
		return fmt.Errorf("writing the settings: %w", err)
	}
	return nil
}
