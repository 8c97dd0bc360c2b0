package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"

	"github.com/spf13/cobra"
)

// newHubSecretsCmd is `capabilities hub secrets`: the credentials sealed in
// the hub's store (CAPABILITIES_KEK_FILE), for a machine with no keychain.
func newHubSecretsCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "secrets",
		Short: "Credentials sealed in the hub's store, for a server with no OS keychain",
		Long: `With CAPABILITIES_KEK_FILE (a file of 32 random bytes, raw or base64, mode 600) or
CAPABILITIES_KEK (their base64) set, the hub keeps credentials in its own store, encrypted
with AES-256-GCM under a data key that is itself sealed under that key-encryption key.
A copy of the store alone reveals no credential. See docs/secrets-at-rest.md.`,
		Args: subcommands,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(newSecretsGenerateKEKCmd(e), newSecretsStatusCmd(e), newSecretsRotateCmd(e), newSecretsSealCmd(e))
	return c
}

func newSecretsGenerateKEKCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "generate-kek <file>",
		Short: "Write a new random key-encryption key to a new file (mode 600)",
		Args:  exactArgs(1, "the file to write the key to"),
		RunE: func(c *cobra.Command, args []string) error {
			k, err := secret.NewKEK()
			if err != nil {
				return err
			}
			if err := secret.WriteKEKFile(args[0], k); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Wrote key-encryption key %s to %s (mode 600).\nUse it for every hub process: export %s=%s\nKeep a copy somewhere safe: without it the hub's sealed credentials cannot be read.\n",
				k.Fingerprint(), args[0], secret.EnvKEKFile, args[0])
			return nil
		},
	}
}

// sealedOf is the hub's sealed store, or an error saying why there is none.
func sealedOf(h *hub.Hub) (*secret.Sealed, error) {
	switch s := h.Secrets().(type) {
	case *secret.Sealed:
		return s, nil
	case interface{ Err() error }:
		return nil, s.Err()
	}
	return nil, fmt.Errorf("this hub's secrets are not sealed in its store: they are kept in %s; set %s to a key-encryption key (capabilities hub secrets generate-kek FILE) to seal them, then store each credential again with capabilities hub auth",
		h.SecretStatus(), secret.EnvKEKFile)
}

func hubIDOf(st store.Store) string {
	if f, ok := st.(interface{ Hub() store.Hub }); ok {
		return f.Hub().ID
	}
	return ""
}

func newSecretsStatusCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Say which key seals the hub's credentials, and check that each one opens",
		Long:  "Opens every sealed credential (printing none) and says which key-encryption key and data key seal them. Exit 1 when one does not open.",
		Args:  exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			s, err := sealedOf(h)
			if err != nil {
				return err
			}
			st, err := s.Check(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if err := e.printJSON(st); err != nil {
					return err
				}
			} else if !st.Sealed {
				fmt.Fprintf(e.stdout, "No credential sealed yet; the first `capabilities hub auth` seals it under key-encryption key %s (%s).\n", st.KEK, st.KEKSource)
			} else {
				fmt.Fprintf(e.stdout, "sealed with key-encryption key %s (%s), data key %d\n", st.SealedWith, st.KEKSource, st.DataKey)
				if len(st.DataKeys) > 1 {
					fmt.Fprintf(e.stdout, "  %d data keys are kept (an unfinished rotation): run `capabilities hub secrets rotate-key --data-key` again to finish it\n", len(st.DataKeys))
				}
				fmt.Fprintf(e.stdout, "%d credential(s): %s\n", len(st.Secrets), strings.Join(st.Secrets, ", "))
				for _, u := range st.Unreadable {
					fmt.Fprintf(e.stdout, "  ! %s\n", u)
				}
			}
			if len(st.Unreadable) > 0 {
				return fmt.Errorf("%d sealed credential(s) do not open", len(st.Unreadable))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return c
}

func newSecretsRotateCmd(e *env) *cobra.Command {
	var newFile, genFile string
	var dataKey, asJSON bool
	c := &cobra.Command{
		Use:   "rotate-key (--new-kek-file FILE | --generate-kek FILE) [--data-key]",
		Short: "Seal the hub's credentials under a new key-encryption key",
		Long: `Re-wraps the hub's data key under a new key-encryption key, in one write: before it the
key in CAPABILITIES_KEK_FILE (or CAPABILITIES_KEK) opens the credentials, after it the new
one does. --new-kek-file reads the new key from a file (mode 600); --generate-kek makes one
and writes it to a new file first. --data-key also makes a new data key and seals every
credential again under it. A rotation that stopped half-way is finished by running the
same command again. Afterwards point CAPABILITIES_KEK_FILE at the new key for every hub
process and restart them.`,
		Args: exactArgs(0, "no arguments (the new key is given with --new-kek-file or --generate-kek)"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			if (newFile == "") == (genFile == "") {
				return usagef("give the new key-encryption key with --new-kek-file FILE, or make one with --generate-kek FILE (one of them)")
			}
			oldKEK, err := secret.KEKFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			st := h.Store()
			if _, sealed, err := secret.IsSealed(c.Context(), st); err != nil {
				return err
			} else if !sealed {
				return fmt.Errorf("rotating the key-encryption key: this hub has no sealed credentials: nothing to rotate (with %s set, `capabilities hub auth` seals them)", secret.EnvKEKFile)
			}
			var newKEK *secret.KEK
			if newFile != "" {
				if newKEK, err = secret.ReadKEKFile(newFile); err != nil {
					return fmt.Errorf("--new-kek-file: %w", err)
				}
			} else {
				if newKEK, err = secret.NewKEK(); err != nil {
					return err
				}
				if err := secret.WriteKEKFile(genFile, newKEK); err != nil {
					return fmt.Errorf("--generate-kek: %w", err)
				}
				newFile = genFile
			}
			rot, err := secret.Rotate(c.Context(), st, hubIDOf(st), oldKEK, newKEK, dataKey)
			if err != nil {
				switch {
				case genFile != "" && (rot == nil || !rot.Rewrapped):
					_ = os.Remove(genFile) // nothing is sealed under it
				case genFile != "":
					err = fmt.Errorf("%w (the credentials are sealed under the new key, in %s: run the command again with --new-kek-file %s to finish)", err, genFile, genFile)
				}
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"from": rot.From, "to": rot.To, "dataKey": rot.DataKey, "resealed": rot.Resealed, "droppedDataKeys": rot.Dropped, "resumed": rot.Resumed, "kekFile": newFile})
			}
			if rot.From == rot.To {
				fmt.Fprintf(e.stdout, "The credentials are sealed under key-encryption key %s.\n", rot.To)
			} else {
				fmt.Fprintf(e.stdout, "Re-wrapped the data key under key-encryption key %s (was %s): the old key no longer opens the credentials.\n", rot.To, rot.From)
			}
			if rot.Resealed > 0 || dataKey {
				fmt.Fprintf(e.stdout, "Sealed %d credential(s) again under data key %d.\n", rot.Resealed, rot.DataKey)
			}
			fmt.Fprintf(e.stdout, "Point every hub process at the new key and restart it: export %s=%s\n", secret.EnvKEKFile, newFile)
			return nil
		}),
	}
	c.Flags().StringVar(&newFile, "new-kek-file", "", "the new key-encryption key: a `FILE` of 32 random bytes, raw or base64, mode 600")
	c.Flags().StringVar(&genFile, "generate-kek", "", "make a new key-encryption key and write it to this new `FILE` (mode 600) first")
	c.Flags().BoolVar(&dataKey, "data-key", false, "also make a new data key and seal every credential again under it")
	c.Flags().BoolVar(&asJSON, "json", false, "print what was done as JSON")
	return c
}

// offKeychain is a keychain that is never there (NO_KEYRING=1).
type offKeychain struct{}

var errKeychainOff = errors.New("the keychain is turned off (NO_KEYRING=1)")

func (offKeychain) Get(string, string) (string, error) { return "", errKeychainOff }
func (offKeychain) Set(string, string, string) error   { return errKeychainOff }
func (offKeychain) Delete(string, string) error        { return errKeychainOff }

func newSecretsSealCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "seal",
		Short: "Move the credentials kept in the OS keychain or the fallback file into the sealed store",
		Long: `With CAPABILITIES_KEK_FILE set, seals every connection's credential that the OS keychain or
the mode-600 fallback file (hub/secrets.json) still holds, then removes it from there.
A credential already sealed is left as it is. Nothing is removed unless every one was sealed.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			ctx := c.Context()
			sealed, err := sealedOf(h)
			if err != nil {
				return err
			}
			st := h.Store()
			opts := secret.Options{Logger: e.log}
			if f, ok := st.(interface{ Dir() string }); ok {
				opts.File = filepath.Join(f.Dir(), "secrets.json")
			}
			if os.Getenv("NO_KEYRING") != "" {
				opts.Keychain = offKeychain{}
			}
			old := secret.Open(opts)
			ids, err := st.List(ctx, store.Connections)
			if err != nil {
				return fmt.Errorf("sealing the credentials: %w", err)
			}
			var moved, kept []string
			for _, ns := range ids {
				conns, err := store.Get[model.Connections](ctx, st, store.Connections, ns)
				if err != nil {
					return fmt.Errorf("sealing the credentials: %w", err)
				}
				for _, it := range conns.Items {
					if _, err := sealed.Get(ctx, it.SecretRef); err == nil {
						kept = append(kept, it.SecretRef)
						continue
					} else if !errors.Is(err, secret.ErrNotFound) {
						return fmt.Errorf("sealing the credentials: %w", err)
					}
					v, err := old.Get(secret.Quiet(ctx), it.SecretRef)
					if errors.Is(err, secret.ErrNotFound) {
						continue
					}
					if err != nil {
						return fmt.Errorf("sealing the credentials: reading %s from %s: %w", it.SecretRef, old.Status(), err)
					}
					if err := sealed.Set(ctx, it.SecretRef, v); err != nil {
						return fmt.Errorf("sealing the credentials: %w", err)
					}
					moved = append(moved, it.SecretRef)
				}
			}
			for _, ref := range moved { // every one is sealed: now remove the old copies
				if err := old.Delete(secret.Quiet(ctx), ref); err != nil && !errors.Is(err, secret.ErrNotFound) {
					return fmt.Errorf("sealing the credentials: %s is sealed, but removing its old copy failed (remove it by hand): %w", ref, err)
				}
			}
			if asJSON {
				return e.printJSON(map[string]any{"sealed": nonNil(moved), "alreadySealed": nonNil(kept)})
			}
			fmt.Fprintf(e.stdout, "Sealed %d credential(s) and removed them from %s", len(moved), old.Status())
			if len(moved) > 0 {
				fmt.Fprintf(e.stdout, ": %s", strings.Join(moved, ", "))
			}
			fmt.Fprintln(e.stdout, ".")
			if len(kept) > 0 {
				fmt.Fprintf(e.stdout, "%d were sealed already: %s.\n", len(kept), strings.Join(kept, ", "))
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print what was sealed as JSON")
	return c
}
