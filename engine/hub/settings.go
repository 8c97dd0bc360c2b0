package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/gofrs/flock"
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
	// RunRetentionDays: a run that ended longer ago is deleted with its
	// journal and handles (0: DefaultRunRetentionDays).
	RunRetentionDays int `json:"runRetentionDays,omitempty"`
	// RunRetentionMB: while the runs take more, the oldest that ended are
	// deleted (0: DefaultRunRetentionMB).
	RunRetentionMB int `json:"runRetentionMB,omitempty"`
}

// The retention of run history when the settings do not say.
const (
	DefaultRunRetentionDays = 7
	DefaultRunRetentionMB   = 1024
	maxRunRetentionDays     = 36500
	maxRunRetentionMB       = 1 << 20
)

// Retention is the run history the settings keep.
func (s Settings) Retention() run.Retention {
	days, mb := s.RunRetentionDays, s.RunRetentionMB
	if days <= 0 {
		days = DefaultRunRetentionDays
	}
	if mb <= 0 {
		mb = DefaultRunRetentionMB
	}
	return run.Retention{Age: time.Duration(days) * 24 * time.Hour, Bytes: int64(mb) << 20}
}

// Check says what is wrong with settings a person entered.
func (s Settings) Check() error {
	if s.RunRetentionDays < 0 || s.RunRetentionDays > maxRunRetentionDays {
		return fmt.Errorf("run retention of %d days: keep runs 1 to %d days (0: the default, %d)", s.RunRetentionDays, maxRunRetentionDays, DefaultRunRetentionDays)
	}
	if s.RunRetentionMB < 0 || s.RunRetentionMB > maxRunRetentionMB {
		return fmt.Errorf("run retention of %d MB: keep 1 to %d MB of runs (0: the default, %d)", s.RunRetentionMB, maxRunRetentionMB, DefaultRunRetentionMB)
	}
	return nil
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

// UpdateSettings changes the person's settings: edit changes what is stored
// now, under a lock, so that two changes at once (two fields typed in a row
// on the Settings screen, or two processes) both land. An error from edit
// is returned as it is, and nothing is written.
func (h *Hub) UpdateSettings(edit func(*Settings) error) error {
	p, err := h.settingsPath()
	if err != nil {
		return fmt.Errorf("writing the settings: %w", err)
	}
	h.settingsMu.Lock() // the file lock orders this process with others
	defer h.settingsMu.Unlock()
	l := flock.New(p+".lock", flock.SetPermissions(0o600))
	if err := l.Lock(); err != nil {
		return fmt.Errorf("locking the settings: %w", err)
	}
	defer func() { _ = l.Unlock() }()
	s, err := h.Settings()
	if err != nil {
		return err
	}
	if err := edit(&s); err != nil {
		return err
	}
	return h.SetSettings(s)
}

// SetSettings writes the person's settings (atomically, mode 600);
// settings Check refuses are not written.
func (h *Hub) SetSettings(s Settings) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("writing the settings: %w", err)
	}
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
