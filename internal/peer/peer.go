// Package peer tells whose process is at the other end of a loopback TCP
// connection, so that a server on 127.0.0.1 serves the person who runs it
// and not another user of the same machine: any local user can connect to
// a loopback port, and a one-time link a browser was started with is on
// its command line for every user to read (ps).
//
// On Linux the owner of the connecting socket is in /proc/net/tcp and
// /proc/net/tcp6. Elsewhere it is not known, and a connection is served as
// before (the link's one-time token and the session cookie are the guard).
package peer

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// ErrUnknown is UID's error where the owner cannot be read: not Linux, or
// no /proc.
var ErrUnknown = errors.New("the owner of a connection is not known on this system")

// UID returns the user id owning the other end of c, a TCP connection
// accepted on a loopback address: the socket whose local address is c's
// remote one and whose remote address is c's local one.
func UID(c net.Conn) (int, error) {
	if runtime.GOOS != "linux" {
		return 0, ErrUnknown
	}
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("finding the owner of a connection: not TCP")
	}
	read := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := find(table, remote, local)
		if err != nil {
			continue
		}
		read++
		if found {
			return uid, nil
		}
	}
	if read == 0 {
		return 0, ErrUnknown
	}
	return 0, fmt.Errorf("finding the owner of the connection from %s: no such socket (it closed?)", remote)
}

// find looks for the socket from local to remote in one /proc/net table.
func find(table string, local, remote *net.TCPAddr) (uid int, found bool, err error) {
	f, err := os.Open(table)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		if !same(fields[1], local) || !same(fields[2], remote) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return 0, false, fmt.Errorf("reading %s: uid %q", table, fields[7])
		}
		return uid, true, nil
	}
	return 0, false, sc.Err()
}

// same reports whether a /proc/net address (hex IP in the kernel's byte
// order, ":", hex port) is a.
func same(field string, a *net.TCPAddr) bool {
	ipHex, portHex, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || len(raw)%4 != 0 {
		return false
	}
	// Each 32-bit word is in host (little-endian on the platforms Go
	// supports here) order.
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	return ip.Equal(a.IP)
}

// SameUser returns a listener that serves only connections whose other end
// this process's user owns, where that can be known (UID); others are
// closed at once, and reported to refused when it is not nil.
func SameUser(ln net.Listener, refused func(uid int)) net.Listener {
	return &sameUser{Listener: ln, uid: os.Getuid(), refused: refused}
}

type sameUser struct {
	net.Listener
	uid     int
	refused func(uid int)
}

func (l *sameUser) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := UID(c)
		if errors.Is(err, ErrUnknown) || err == nil && uid == l.uid {
			return c, nil
		}
		_ = c.Close()
		if err == nil && l.refused != nil {
			l.refused(uid)
		}
	}
}
