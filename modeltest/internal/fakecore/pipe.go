package fakecore

import (
	"context"
	"net"
	"sync"
)

// pipeListener is an in-memory net.Listener: DialContext hands one end of a
// net.Pipe to Accept and returns the other. Everything it does is channel
// operations, so inside a synctest bubble its waits are durably blocking.
type pipeListener struct {
	host  string // what Addr reports: the server's placeholder host
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener(host string) *pipeListener {
	return &pipeListener{host: host, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr(l.host) }

// DialContext connects to the listener, whatever the address.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: net.ErrClosed}
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
