package playground

import (
	"fmt"
	"net"
	"strconv"

	"github.com/miniapp-host/miniapp-host/authserver"
)

// DefaultLauncherAddr is the launcher's default address; [Layout] places
// the Miniapps and the automation channel after it (docs/playground.md,
// "Ports").
const DefaultLauncherAddr = "127.0.0.1:8700"

// base says which of the two given addresses a part's port follows.
type base int

const (
	fromService  base = iota // --addr: the reference server's roles
	fromLauncher             // --launcher-addr: the launcher and what it launches
)

// slot is one part of the playground's world in the port layout: its
// port is its base's plus offset.
type slot struct {
	name   string
	base   base
	offset int
	addr   func(*Addrs) *string // nil when a has no such entry (a short Broken)
}

// layout is the one table of the playground's ports (docs/playground.md,
// "Ports"): every address derives from the service's and the launcher's,
// each part on a port of its own. The demos' addresses are the seed
// world's (package demoapps), the service's is authserver's default, and
// devapp.DefaultIssuer names the service's: the tests check that they
// agree.
var layout = func() []slot {
	s := []slot{
		{"the service", fromService, 0, func(a *Addrs) *string { return &a.Service }},
		{"the dashboard", fromService, 1, func(a *Addrs) *string { return &a.Dashboard }},
		{"the signing role", fromService, 2, func(a *Addrs) *string { return &a.Signing }},
		{"the invoicing role", fromService, 3, func(a *Addrs) *string { return &a.Invoicing }},
		{"the launcher", fromLauncher, 0, func(a *Addrs) *string { return &a.Launcher }},
		{"the public demo", fromLauncher, 1, func(a *Addrs) *string { return &a.Public }},
		{"the confidential demo", fromLauncher, 2, func(a *Addrs) *string { return &a.Confidential }},
	}
	for i, kind := range BrokenKinds() {
		s = append(s, slot{"the broken Miniapp " + kind, fromLauncher, 3 + i, func(a *Addrs) *string {
			if i >= len(a.Broken) {
				return nil
			}
			return &a.Broken[i]
		}})
	}
	return append(s,
		slot{"the FAPI demo", fromLauncher, 7, func(a *Addrs) *string { return &a.FAPI }},
		slot{"your Miniapp's folder (dev)", fromLauncher, 8, func(a *Addrs) *string { return &a.Dev }},
		slot{"the automation channel", fromLauncher, 9, func(a *Addrs) *string { return &a.Automation }},
	)
}()

// Layout is every address of the playground's world from two: service,
// the reference server's (the dashboard, signing and invoicing roles take
// the next three ports), and launcher (the demo Miniapps the next two,
// the broken ones the four after, the FAPI demo port + 7, a `dev` folder
// port + 8, the automation channel port + 9). A port 0 (or an address
// without a port number) gives port 0 to every part that follows it: free
// ports for all.
func Layout(service, launcher string) Addrs {
	a := Addrs{Broken: make([]string, len(BrokenKinds()))}
	for _, s := range layout {
		from := service
		if s.base == fromLauncher {
			from = launcher
		}
		*s.addr(&a) = offsetAddr(from, s.offset)
	}
	return a
}

// DefaultAddrs is the layout of the default addresses: the service on
// authserver.DefaultServiceAddr, the launcher on DefaultLauncherAddr.
func DefaultAddrs() Addrs { return Layout(authserver.DefaultServiceAddr, DefaultLauncherAddr) }

// offsetAddr is addr with its port moved by n; port 0 stays 0.
func offsetAddr(addr string, n int) string {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p == 0 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(p+n))
}

// Part is one address of the playground's world and what listens there.
type Part struct {
	Name, Addr string
}

// Parts lists every address of a (those set), in the layout's order, with
// what listens there.
func (a Addrs) Parts() []Part {
	var out []Part
	for _, n := range a.named() {
		if n.addr != "" {
			out = append(out, Part{Name: n.name, Addr: n.addr})
		}
	}
	return out
}

type namedAddr struct{ name, addr string }

func (a Addrs) named() []namedAddr {
	var out []namedAddr
	for _, s := range layout {
		if p := s.addr(&a); p != nil {
			out = append(out, namedAddr{s.name, *p})
		}
	}
	return out
}

// Check refuses two parts on one port (port 0, a free port, excepted):
// the second could not listen, whichever loopback host each names.
func (a Addrs) Check() error {
	seen := map[int]namedAddr{}
	for _, n := range a.named() {
		_, port, err := net.SplitHostPort(n.addr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p == 0 {
			continue
		}
		if first, dup := seen[p]; dup {
			return fmt.Errorf("playground: port %d is given twice, to %s (%s) and to %s (%s): every part needs a port of its own (docs/playground.md, \"Ports\")",
				p, first.name, first.addr, n.name, n.addr)
		}
		seen[p] = n
	}
	return nil
}

// PartOn names what the playground's layout a places on port, "" when
// nothing: for an error that says which part could not listen.
func (a Addrs) PartOn(port int) string {
	for _, n := range a.named() {
		if _, p, err := net.SplitHostPort(n.addr); err == nil && p == strconv.Itoa(port) && port != 0 {
			return n.name
		}
	}
	return ""
}
