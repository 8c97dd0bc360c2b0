package secret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"
)

// Service is the keychain service every secret is stored under; the
// reference is the account.
const Service = "capabilities.sh"

// DefaultTimeout bounds every keychain call: go-keyring can block forever
// (a session bus that never answers, an unlock prompt nobody sees).
const DefaultTimeout = 3 * time.Second

// probeAccount is read once by Status to learn whether the keychain answers.
// It is not a valid reference, so it never names a stored secret.
const probeAccount = "capabilities.sh:probe"

// Keychain is the OS keychain as go-keyring offers it. Options.Keychain
// replaces it in tests.
type Keychain interface {
	Get(service, account string) (string, error)
	Set(service, account, value string) error
	Delete(service, account string) error
}

// Options configures Open. The zero value uses the OS keychain with no
// fallback file and logs through slog.Default().
type Options struct {
	// File is the fallback file, e.g. $CAPABILITIES_HOME/hub/secrets.json.
	// Empty: without a keychain every call fails with ErrUnavailable.
	File string
	// Logger receives the warning that secrets are kept in the file, each
	// time the file is used. Nil: slog.Default().
	Logger *slog.Logger
	// Timeout bounds each keychain call. Zero: DefaultTimeout.
	Timeout time.Duration
	// Service overrides the keychain service name. Empty: Service.
	Service string
	// Keychain replaces the OS keychain (tests). Nil: go-keyring.
	Keychain Keychain
}

// Keyring is the secret store of the hub: the OS keychain, or the fallback
// file when the keychain fails or does not answer in time. Once it falls
// back it stays on the file for its lifetime (a hung keychain is not asked
// again); a new Keyring (a new process) tries the keychain again.
//
// While the keychain is in use, the file is still consulted: Get finds a
// value stored there during an earlier fallback (and warns), Set removes
// such a copy, Delete deletes both.
type Keyring struct {
	service string
	file    *fileStore
	log     *slog.Logger
	timeout time.Duration
	kc      Keychain

	mu     sync.Mutex
	known  bool   // the keychain answered, or the store fell back
	reason string // why the file is used; "" while the keychain is
	// warnedFile and warnedLeftover: the fallback file's use, and a value
	// read from it while the keychain works, are said once per process.
	warnedFile, warnedLeftover bool
}

var _ Store = (*Keyring)(nil)

// Open returns the store described by opts. It does not touch the keychain
// yet: the first call (or Status) does.
func Open(opts Options) *Keyring {
	k := &Keyring{service: opts.Service, log: opts.Logger, timeout: opts.Timeout, kc: opts.Keychain}
	if k.service == "" {
		k.service = Service
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	if k.timeout <= 0 {
		k.timeout = DefaultTimeout
	}
	if k.kc == nil {
		k.kc = osKeychain{}
	}
	if opts.File != "" {
		k.file = &fileStore{path: opts.File}
	}
	return k
}

type osKeychain struct{}

func (osKeychain) Get(service, account string) (string, error) {
	if err := checkSessionBus(); err != nil {
		return "", err
	}
	return keyring.Get(service, account)
}

func (osKeychain) Set(service, account, value string) error {
	if err := checkSessionBus(); err != nil {
		return err
	}
	return keyring.Set(service, account, value)
}

func (osKeychain) Delete(service, account string) error {
	if err := checkSessionBus(); err != nil {
		return err
	}
	return keyring.Delete(service, account)
}

// Status says where values are kept. Before any other call it asks the
// keychain once (bounded by the timeout) to find out.
func (k *Keyring) Status() Status {
	k.mu.Lock()
	known := k.known
	k.mu.Unlock()
	if !known {
		_, err := k.keychain(context.Background(), func() (string, error) {
			return k.kc.Get(k.service, probeAccount)
		})
		if err != nil && !errors.Is(err, keyring.ErrNotFound) {
			k.fallBack(err)
		} else {
			k.markUp()
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	s := Status{Backend: BackendKeychain, Reason: k.reason}
	if k.file != nil {
		s.File = k.file.path
	}
	if k.reason != "" {
		s.Backend = BackendFile
	}
	return s
}

// Backend is Status().Backend.
func (k *Keyring) Backend() Backend { return k.Status().Backend }

// Get returns the value stored under ref, or an error wrapping ErrNotFound.
func (k *Keyring) Get(ctx context.Context, ref string) (string, error) {
	if err := ValidateRef(ref); err != nil {
		return "", fmt.Errorf("getting secret: %w", err)
	}
	if k.keychainUp() {
		v, err := k.keychain(ctx, func() (string, error) { return k.kc.Get(k.service, ref) })
		switch {
		case err == nil:
			k.markUp()
			return v, nil
		case errors.Is(err, keyring.ErrNotFound):
			k.markUp()
			return k.leftover(ctx, ref)
		case ctx.Err() != nil:
			return "", fmt.Errorf("getting secret %s: %w", ref, err)
		}
		k.fallBack(err)
	}
	if err := k.useFile(ctx, "getting", ref); err != nil {
		return "", err
	}
	v, fixed, err := k.file.get(ctx, ref)
	k.warnFixed(fixed)
	if err != nil {
		return "", fmt.Errorf("getting secret %s: %w", ref, err)
	}
	return v, nil
}

// leftover looks for ref in the fallback file while the keychain is in use:
// a value stored there when the keychain was not available.
func (k *Keyring) leftover(ctx context.Context, ref string) (string, error) {
	if k.file == nil || !k.file.exists() {
		return "", fmt.Errorf("getting secret %s: %w", ref, ErrNotFound)
	}
	v, fixed, err := k.file.get(ctx, ref)
	k.warnFixed(fixed)
	if err != nil {
		return "", fmt.Errorf("getting secret %s: %w", ref, err)
	}
	if !quiet(ctx) && k.once(&k.warnedLeftover) {
		k.log.Warn("secret read from the fallback file, not the OS keychain; store it again to move it into the keychain (capabilities hub auth)",
			"ref", ref, "file", k.file.path)
	}
	return v, nil
}

// Set stores value under ref, replacing any earlier value.
func (k *Keyring) Set(ctx context.Context, ref, value string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("storing secret: %w", err)
	}
	if value == "" {
		return fmt.Errorf("storing secret %s: %w", ref, ErrEmpty)
	}
	if k.keychainUp() {
		_, err := k.keychain(ctx, func() (string, error) { return "", k.kc.Set(k.service, ref, value) })
		switch {
		case err == nil:
			k.markUp()
			return k.dropLeftover(ctx, ref)
		case errors.Is(err, keyring.ErrSetDataTooBig):
			return fmt.Errorf("storing secret %s: %w", ref, err)
		case ctx.Err() != nil:
			return fmt.Errorf("storing secret %s: %w", ref, err)
		}
		k.fallBack(err)
	}
	if err := k.useFile(ctx, "storing", ref); err != nil {
		return err
	}
	fixed, err := k.file.update(ctx, func(m map[string]string) bool {
		if m[ref] == value {
			return false
		}
		m[ref] = value
		return true
	})
	k.warnFixed(fixed)
	if err != nil {
		return fmt.Errorf("storing secret %s: %w", ref, err)
	}
	return nil
}

// dropLeftover removes ref from the fallback file, so that a value now in
// the keychain has no stale copy on disk.
func (k *Keyring) dropLeftover(ctx context.Context, ref string) error {
	if k.file == nil || !k.file.exists() {
		return nil
	}
	if _, _, err := k.file.get(ctx, ref); errors.Is(err, ErrNotFound) {
		return nil
	}
	fixed, err := k.file.update(ctx, func(m map[string]string) bool {
		_, ok := m[ref]
		delete(m, ref)
		return ok
	})
	k.warnFixed(fixed)
	if err != nil {
		return fmt.Errorf("removing the file copy of secret %s: %w", ref, err)
	}
	return nil
}

// Delete removes the value stored under ref; an error wrapping ErrNotFound
// says there was none.
func (k *Keyring) Delete(ctx context.Context, ref string) error {
	if err := ValidateRef(ref); err != nil {
		return fmt.Errorf("deleting secret: %w", err)
	}
	found, useFile := false, true
	if k.keychainUp() {
		_, err := k.keychain(ctx, func() (string, error) { return "", k.kc.Delete(k.service, ref) })
		switch {
		case err == nil:
			k.markUp()
			found = true
			useFile = k.file != nil && k.file.exists()
		case errors.Is(err, keyring.ErrNotFound):
			k.markUp()
			useFile = k.file != nil && k.file.exists()
		case ctx.Err() != nil:
			return fmt.Errorf("deleting secret %s: %w", ref, err)
		default:
			k.fallBack(err)
			if err := k.useFile(ctx, "deleting", ref); err != nil {
				return err
			}
		}
	} else if err := k.useFile(ctx, "deleting", ref); err != nil {
		return err
	}
	if useFile && k.file != nil {
		fixed, err := k.file.update(ctx, func(m map[string]string) bool {
			_, ok := m[ref]
			delete(m, ref)
			found = found || ok
			return ok
		})
		k.warnFixed(fixed)
		if err != nil {
			return fmt.Errorf("deleting secret %s: %w", ref, err)
		}
	}
	if !found {
		return fmt.Errorf("deleting secret %s: %w", ref, ErrNotFound)
	}
	return nil
}

func (k *Keyring) keychainUp() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reason == ""
}

func (k *Keyring) markUp() {
	k.mu.Lock()
	k.known = true
	k.mu.Unlock()
}

// fallBack switches the store to the file for its lifetime.
func (k *Keyring) fallBack(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reason == "" {
		k.reason = reasonFor(err)
	}
	k.known = true
}

// useFile announces, once per process and for a call the command itself
// needs (not a Quiet one), that the file serves secrets, or fails when
// there is no file.
func (k *Keyring) useFile(ctx context.Context, op, ref string) error {
	k.mu.Lock()
	reason := k.reason
	k.mu.Unlock()
	if k.file == nil {
		return fmt.Errorf("%s secret %s: %w: the OS keychain is unavailable (%s) and no fallback file is configured",
			op, ref, ErrUnavailable, reason)
	}
	if !quiet(ctx) && k.once(&k.warnedFile) {
		k.log.Warn("secrets are kept in a file, not in the OS keychain",
			"op", op, "ref", ref, "file", k.file.path, "reason", reason,
			"fix", "start and unlock a Secret Service in this session (GNOME Keyring, KeePassXC) and store each credential again with `capabilities hub auth`; `capabilities hub doctor` says what it finds")
	}
	return nil
}

// once reports whether *flag was false, and sets it.
func (k *Keyring) once(flag *bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	first := !*flag
	*flag = true
	return first
}

type quietKey struct{}

// Quiet marks ctx's reads as the hub's own (every credential read to scrub
// output or check where a call goes): they say nothing of the fallback
// file, which the warnings of the reads a command needs say once.
func Quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

func quiet(ctx context.Context) bool { q, _ := ctx.Value(quietKey{}).(bool); return q }

func (k *Keyring) warnFixed(fixed bool) {
	if fixed {
		k.log.Warn("the secrets file was readable by others; restricted it to mode 600", "file", k.file.path)
	}
}

type result struct {
	v   string
	err error
}

// errTimeout: the keychain did not answer in time.
type errTimeout time.Duration

func (e errTimeout) Error() string {
	return fmt.Sprintf("the keychain did not answer within %s", time.Duration(e))
}

// keychain runs f, bounded by the timeout and ctx. A call that times out
// is left running in its goroutine: go-keyring offers no way to cancel it.
func (k *Keyring) keychain(ctx context.Context, f func() (string, error)) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(k.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-t.C:
		return "", errTimeout(k.timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// reasonFor says in a few words why the keychain cannot be used.
func reasonFor(err error) string {
	var to errTimeout
	msg := err.Error()
	var dp *dbus.Error
	var dv dbus.Error
	switch {
	case errors.As(err, &dp) && dp.Name != "":
		msg = dp.Name + ": " + msg
	case errors.As(err, &dv) && dv.Name != "":
		msg = dv.Name + ": " + msg
	}
	switch {
	case errors.As(err, &to):
		return msg + " (a hung session bus or an unanswered unlock prompt)"
	case strings.Contains(msg, "ServiceUnknown") || strings.Contains(msg, "org.freedesktop.secrets"):
		return "no Secret Service on the session bus (start gnome-keyring or KeePassXC): " + msg
	case errors.Is(err, errNoSessionBus):
		return msg
	case strings.Contains(msg, "DBUS_SESSION_BUS_ADDRESS") || strings.Contains(msg, "dbus-launch") || strings.Contains(msg, "autolaunch"):
		return "no D-Bus session bus: " + msg
	case strings.Contains(strings.ToLower(msg), "locked") || strings.Contains(msg, "prompt") || strings.Contains(msg, "IsLocked"):
		return "the keyring is locked: " + msg
	}
	return "the keychain failed: " + msg
}
