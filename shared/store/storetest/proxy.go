package storetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server until it is stopped, so a test can take a dependency away
// in the middle of a run: Stop closes the listener and every open connection (a crashed server);
// Blackhole keeps accepting but never answers (a server behind a dropped route).
type Proxy struct {
	l      net.Listener
	target string

	mu        sync.Mutex
	conns     []net.Conn
	blackhole bool
	stopped   bool
}

// NewProxy listens on 127.0.0.1 and forwards to target. It is stopped when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target}
	go p.serve()
	t.Cleanup(p.Stop)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns = append(p.conns, c)
		hole := p.blackhole
		p.mu.Unlock()
		if hole {
			continue // hold the connection open, say nothing
		}
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

// Blackhole cuts every open connection and leaves new ones hanging unanswered.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.blackhole = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Stop closes the listener and every connection; new connections are refused.
func (p *Proxy) Stop() {
	p.mu.Lock()
	p.stopped = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.l.Close()
	for _, c := range conns {
		c.Close()
	}
}
