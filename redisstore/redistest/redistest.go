// Package redistest starts a real redis-server for tests: on loopback, on
// a free port, in its own temporary directory, stopped when the test ends.
//
// A machine without redis-server skips the tests that need one, loudly;
// with PORTICO_REQUIRE_REDIS=1 in the environment (as .ci/run sets it) the
// same test fails instead, so a CI run cannot pass without them.
//
// A [Proxy] in front of a server injects the faults of the network
// between: a reply lost after the server ran the command, late replies,
// connections cut under way.
package redistest

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skip into a failure.
const RequireEnv = "PORTICO_REQUIRE_REDIS"

// Server is a redis-server process started by [Start].
type Server struct {
	// Addr is the server's host:port on loopback.
	Addr string

	tb      testing.TB
	bin     string
	dir     string
	port    int
	cluster bool
	args    []string // extra redis-server options, given at every start

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a redis-server for tb and stops it when tb ends. Without
// redis-server on the PATH it skips tb, or fails it when RequireEnv is
// "1".
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, false)
}

// StartWith is [Start] with extra redis-server options, such as
// "--appendonly", "yes", "--appendfsync", "always". They follow Start's
// own options, so an option given again overrides Start's, and they are
// given again at every [Server.Restart]: a server with an append-only
// file reads it back from its directory, which Restart keeps.
func StartWith(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return start(tb, false, args...)
}

// StartCluster is [Start] for a one-node Redis Cluster that serves every
// slot: a script whose keys hash to different slots fails with CROSSSLOT,
// as on a cluster of many nodes.
func StartCluster(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, true)
}

func start(tb testing.TB, cluster bool, args ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redistest: no redis-server on the PATH, so the tests against a real Redis DID NOT RUN " +
			"(install it: apt-get install -y redis-server)"
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatal(msg + "; " + RequireEnv + "=1 makes this a failure")
		}
		tb.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), tb: tb, bin: bin, dir: tb.TempDir(), port: port, cluster: cluster,
		args: args}
	s.Restart()
	tb.Cleanup(s.Stop)
	if cluster {
		s.assignSlots()
	}
	return s
}

// Restart starts the server again after [Server.Stop], on the same port
// and in the same directory, and returns once it accepts connections. Its
// dataset is empty unless [StartWith]'s options persist it (Start's keep
// nothing on disk).
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.tb.Fatal("redistest: Restart of a running server")
	}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--enable-debug-command", "local",
		"--loglevel", "notice", "--logfile", ""}
	if s.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.tb.Fatal("redistest: ", err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), "Ready to accept connections") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			s.tb.Fatal("redistest: redis-server exited before accepting connections")
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		s.tb.Fatal("redistest: redis-server not ready after 10 s")
	}
	s.cmd = cmd
}

// assignSlots gives the one node every slot and waits until the cluster
// says it is ok.
func (s *Server) assignSlots() {
	s.tb.Helper()
	c := NewClient(s.Addr)
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		s.tb.Fatal("redistest: ", err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatal("redistest: cluster not ok after 10 s: ", info, err)
		}
	}
}

// ClusterClient returns a cluster client of the server, with context
// timeouts enabled, closed when the test ends.
func (s *Server) ClusterClient(tb testing.TB) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr}, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Stop stops the server (SIGTERM, then waits for it to exit). Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Client returns a client of the server with context timeouts enabled
// (as redisstore requires), closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	c := NewClient(s.Addr)
	tb.Cleanup(func() { c.Close() })
	return c
}

// NewClient returns a client of the server at addr with context timeouts
// enabled, as redisstore requires, and no retries of its own.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond})
}

// Pause makes the server hold every client's writes and scripts for d
// (CLIENT PAUSE WRITE: an EVALSHA counts as a write), as a server stalled
// by a failover does: connections stay open and the commands wait. Reads
// and [Server.Unpause] still go through.
func (s *Server) Pause(tb testing.TB, d time.Duration) {
	tb.Helper()
	c := s.Client(tb)
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		tb.Fatal(err)
	}
}

// Sleep blocks the whole server for d (DEBUG SLEEP), as a slow command
// does, and returns once it answers again.
func (s *Server) Sleep(tb testing.TB, d time.Duration) {
	tb.Helper()
	c := NewClient(s.Addr)
	defer c.Close()
	if err := c.Do(context.Background(), "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', -1, 64)).Err(); err != nil {
		tb.Error(err)
	}
}

// Unpause ends a [Server.Pause] early.
func (s *Server) Unpause(tb testing.TB) {
	tb.Helper()
	c := s.Client(tb)
	if err := c.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		tb.Fatal(err)
	}
}
