package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProxyRangesSet(t *testing.T) {
	tests := []struct {
		sets    []string
		want    string
		wantErr string
	}{
		{[]string{"10.0.0.5"}, "10.0.0.5/32", ""},
		{[]string{"10.0.0.0/8", "fd00::/8"}, "10.0.0.0/8,fd00::/8", ""},
		{[]string{"10.0.0.0/8, 192.168.1.2 ::1"}, "10.0.0.0/8,192.168.1.2/32,::1/128", ""},
		{[]string{"10.1.2.3/16"}, "", `reading --trusted-proxy "10.1.2.3/16": the address has bits set past /16; did you mean 10.1.0.0/16?`},
		{[]string{"nginx"}, "", `reading --trusted-proxy "nginx": not an IP address or CIDR range (such as 10.0.0.0/8 or 127.0.0.1)`},
		{[]string{"10.0.0.0/40"}, "", `reading --trusted-proxy "10.0.0.0/40": not a CIDR range (such as 10.0.0.0/8 or fd00::/8)`},
		{[]string{"fe80::1%eth0"}, "", `reading --trusted-proxy "fe80::1%eth0": an address with a zone cannot be allowed; give it without %eth0`},
		{[]string{" , "}, "", "reading --trusted-proxy: the range is empty; give a CIDR range such as 10.0.0.0/8 or an address such as 127.0.0.1"},
	}
	for _, tt := range tests {
		var r proxyRanges
		var gotErr string
		for _, s := range tt.sets {
			if err := r.Set(s); err != nil {
				gotErr = err.Error()
				break
			}
		}
		if d := cmp.Diff(tt.wantErr, gotErr); d != "" {
			t.Errorf("Set(%q) error (-want +got):\n%s", tt.sets, d)
		}
		if tt.wantErr == "" && r.String() != tt.want {
			t.Errorf("Set(%q) = %s; want %s", tt.sets, r.String(), tt.want)
		}
	}
}
