package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStoreURL(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env string
		want            string
		usage           string // a usage error containing this
	}{
		{name: "neither: the hub folder"},
		{name: "the environment", env: "postgres://u:p@h/db", want: "postgres://u:p@h/db"},
		{name: "postgresql scheme", env: "postgresql://u@h/db", want: "postgresql://u@h/db"},
		{name: "the flag wins", flag: "postgres://f@h/db", env: "postgres://e@h/db", want: "postgres://f@h/db"},
		{name: "not postgres, flag", flag: "mysql://u:p@h/db", usage: "--store: the store must be a postgres:// URL"},
		{name: "not postgres, env", env: "/var/lib/hub", usage: "CAPABILITIES_STORE: the store must be a postgres:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CAPABILITIES_STORE", tc.env)
			e := &env{store: tc.flag}
			got, err := e.storeURL()
			if tc.usage != "" {
				var u usageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("storeURL() error = %v, want a usage error with %q", err, tc.usage)
				}
				if strings.Contains(err.Error(), ":p@") {
					t.Errorf("the error shows the URL's password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("storeURL() (-want +got):\n%s", diff)
			}
		})
	}
}
