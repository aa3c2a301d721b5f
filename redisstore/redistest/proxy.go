package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of a Redis server, to inject
// the faults of a network between a client and the server: a reply lost
// after the server ran the command ([Proxy.DropReply]), late replies
// ([Proxy.Delay]) and connections cut under way ([Proxy.Reset]). Point a
// client at Addr. Build it with [Server.Proxy] or [NewProxy]; it stops
// when the test ends, its goroutines with it. A Proxy is safe for
// concurrent use.
//
// A cut connection is closed, not aborted: the client reads EOF, as when
// a server or a middlebox drops the connection, which go-redis retries on
// a new connection (MaxRetries, 3 by default) by sending the command
// again. That is the fault an idempotent command survives and a
// non-idempotent one applies twice.
type Proxy struct {
	// Addr is the proxy's host:port on loopback.
	Addr string

	target string
	ln     net.Listener
	wg     sync.WaitGroup
	done   chan struct{}

	mu      sync.Mutex
	conns   map[*pconn]struct{}
	drops   []string // command-name prefixes of the replies to drop, in order
	delay   time.Duration
	closed  bool
	dropped atomic.Int64
}

// pconn is one proxied connection: the client's and the server's ends.
type pconn struct {
	client, server net.Conn
	drop           atomic.Pointer[string] // set: drop the next reply (the prefix it matched)
	once           sync.Once
}

func (c *pconn) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}

// Proxy returns a [Proxy] in front of s, closed when tb ends. It follows
// s across [Server.Stop] and [Server.Restart]: each new connection dials s.
func (s *Server) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	return NewProxy(tb, s.Addr)
}

// NewProxy returns a [Proxy] in front of the server at addr, listening on
// a free loopback port, closed when tb ends.
func NewProxy(tb testing.TB, addr string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal("redistest: ", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: addr, ln: ln, done: make(chan struct{}), conns: map[*pconn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// DropReply makes the next command whose name starts with prefix (case
// insensitive: "EVAL" matches EVAL and EVALSHA; "" matches any) reach the
// server, which runs it; its reply is then discarded and the connection
// closed before the client reads any of it. An error reply (NOSCRIPT, a
// refused command: nothing ran) is delivered and the drop waits for the
// next match. Calls queue: two calls drop two replies. [Proxy.Dropped]
// counts the replies dropped.
func (p *Proxy) DropReply(prefix string) {
	p.mu.Lock()
	p.drops = append(p.drops, strings.ToUpper(prefix))
	p.mu.Unlock()
}

// Dropped returns how many replies [Proxy.DropReply] has dropped.
func (p *Proxy) Dropped() int { return int(p.dropped.Load()) }

// Delay holds every reply that arrives from now on for d before
// forwarding it; zero ends the delay. A client whose timeout is shorter
// gives up while the command has run: a late reply.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Reset closes every connection open now, both ends: a command under way
// may have run on the server, and its client reads EOF. New connections
// are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := make([]*pconn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Close stops the proxy: it stops accepting, closes every connection and
// waits for its goroutines. Closing twice does nothing.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.ln.Close()
	p.Reset()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		sc, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			cc.Close() // the server is down: so is the proxy to it
			continue
		}
		c := &pconn{client: cc, server: sc}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.requests(c)
		go p.replies(c)
	}
}

// forget removes c from the open connections and closes it.
func (p *Proxy) forget(c *pconn) {
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// requests forwards c's commands to the server one at a time, arming a
// drop on c when a command matches the first pending one. A client sends
// its next command once it has read the reply to the last (go-redis does,
// pipelines aside), so the next bytes from the server are this command's
// reply.
func (p *Proxy) requests(c *pconn) {
	defer p.wg.Done()
	defer p.forget(c)
	r := bufio.NewReader(c.client)
	for {
		raw, name, err := readCommand(r)
		if err != nil {
			return
		}
		p.mu.Lock()
		if len(p.drops) > 0 && strings.HasPrefix(name, p.drops[0]) {
			pre := p.drops[0]
			p.drops = p.drops[1:]
			c.drop.Store(&pre)
		}
		p.mu.Unlock()
		if _, err := c.server.Write(raw); err != nil {
			return
		}
	}
}

// replies forwards the server's replies to c's client, after the delay in
// force, and drops the reply a drop was armed for.
func (p *Proxy) replies(c *pconn) {
	defer p.wg.Done()
	defer p.forget(c)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			if pre := c.drop.Swap(nil); pre != nil {
				if buf[0] != '-' {
					p.dropped.Add(1)
					return // discarded, and the connection closed
				}
				p.mu.Lock() // an error: nothing ran, the drop waits
				p.drops = append([]string{*pre}, p.drops...)
				p.mu.Unlock()
			}
			p.mu.Lock()
			d := p.delay
			p.mu.Unlock()
			if d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-p.done:
					t.Stop()
					return
				}
			}
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readCommand reads one command from a client: a RESP array of bulk
// strings, or an inline command (one line). It returns the command's raw
// bytes and its name in upper case.
func readCommand(r *bufio.Reader) (raw []byte, name string, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, "", err
	}
	if len(line) == 0 || line[0] != '*' {
		if f := bytes.Fields(line); len(f) > 0 {
			name = strings.ToUpper(string(f[0]))
		}
		return line, name, nil
	}
	n, err := length(line, '*', 1<<20)
	if err != nil {
		return nil, "", err
	}
	raw = line
	for i := range n {
		hdr, err := r.ReadBytes('\n')
		if err != nil {
			return nil, "", err
		}
		size, err := length(hdr, '$', 512<<20)
		if err != nil {
			return nil, "", err
		}
		body := make([]byte, size+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, "", err
		}
		if i == 0 {
			name = strings.ToUpper(string(body[:size]))
		}
		raw = append(append(raw, hdr...), body...)
	}
	return raw, name, nil
}

// length reads the count of a RESP header line ("*3\r\n", "$5\r\n") that
// must begin with kind and count at most limit; anything else is malformed.
func length(line []byte, kind byte, limit int) (int, error) {
	if len(line) == 0 || line[0] != kind {
		return 0, errors.New("redistest: malformed command")
	}
	n, err := strconv.Atoi(string(bytes.TrimRight(line[1:], "\r\n")))
	if err != nil || n < 0 || n > limit {
		return 0, errors.New("redistest: malformed command")
	}
	return n, nil
}
