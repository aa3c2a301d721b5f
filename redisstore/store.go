package redisstore

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/internal/mono"
)

// Defaults of [Config].
const (
	DefaultPrefix    = "portico:"
	DefaultTimeout   = 50 * time.Millisecond
	DefaultProbe     = time.Second
	DefaultBudgetTTL = 10 * time.Minute
	DefaultRefresh   = 100 * time.Millisecond
)

// opSlack is how long an operation's record outlives the operation's
// Timeout: a resend is sent before the Timeout ends, and runs once the
// server reads it, later by a stall of the server (up to opSlack).
const opSlack = time.Second

// ErrUnavailable is wrapped by every error of an operation the server did
// not answer within the Store's own [Config.Timeout] or at all, or
// answered with a state that passes (LOADING, READONLY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN, BUSY, OOM, MISCONF, NOREPLICAS, max clients,
// MOVED or ASK), and of the operations refused at once while the Store
// waits to probe the server again (see [Config.Probe]).
var ErrUnavailable = errors.New("redisstore: redis unavailable")

// ErrRefused is wrapped by every error of an operation the server answered
// with a refusal that no wait would change: a configuration error or a bug
// (NOPERM from an ACL, WRONGTYPE from a key of another type under the
// Prefix, an ERR from a script, NOAUTH, CROSSSLOT). Such an error starts
// no outage: the Store stays available, the next operation asks the
// server again, and the Logger gets one error record per kind (the
// reply's first word). The layer decides that one call without the store,
// by its failure mode, as for [ErrUnavailable] (see Failure modes in the
// package documentation).
var ErrRefused = errors.New("redisstore: redis refused the operation")

// Config configures a [Store]. Client is required; every other zero field
// is a default.
type Config struct {
	// Client talks to the server: a *redis.Client (one server, or Valkey),
	// a *redis.ClusterClient or a *redis.Ring. It must have
	// ContextTimeoutEnabled, so that Timeout, a context deadline, bounds
	// each operation; New refuses one without. Its retries (MaxRetries)
	// are safe: a resent script applies once (see the package
	// documentation).
	Client redis.UniversalClient
	// Prefix starts every key, to share a server with other data. Zero
	// means [DefaultPrefix] ("portico:"); it must not contain '{' or '}',
	// which delimit the hash tags.
	Prefix string
	// Timeout bounds each operation, a round trip on the happy path: past
	// it the operation fails with [ErrUnavailable] and the layer applies
	// its failure mode. Zero means [DefaultTimeout] (50 ms).
	Timeout time.Duration
	// Probe is how long after a failure every operation fails at once,
	// without touching the network; then one operation at a time tries the
	// server, and the first that succeeds ends the outage. Zero means
	// [DefaultProbe] (1 s).
	Probe time.Duration
	// BudgetTTL is how long a retry budget bucket untouched by deposits or
	// retries is kept; it then comes back full. Zero means
	// [DefaultBudgetTTL] (10 minutes).
	BudgetTTL time.Duration
	// Refresh is how often a [Cooldowns] reads the cooldowns every instance
	// set into its local copy: another instance may still call a cooling
	// route for about this long (see Staleness in the package
	// documentation). Zero means [DefaultRefresh] (100 ms).
	Refresh time.Duration
	// Logger receives a warning when the server becomes unavailable, a
	// record when it is back, and an error the first time the server
	// refuses an operation with each kind of [ErrRefused]. Nil discards.
	// go-redis writes its own connection pool's messages ("failed to dial") to standard error
	// through its package logger: redis.SetLogger routes or silences them.
	Logger *slog.Logger
}

// Store is the connection and failure state that [Buckets], [Budgets],
// [Effects] and [Cooldowns] share. Build it with [New]. A Store is safe for concurrent use;
// it never closes the Client.
type Store struct {
	c         redis.UniversalClient
	prefix    string
	timeout   time.Duration
	probe     time.Duration
	budgetTTL time.Duration
	refresh   time.Duration
	log       *slog.Logger
	opBase    string        // random: the start of this Store's operation ids (see opKey)
	opTTL     int64         // milliseconds an operation's record is kept: Timeout + opSlack
	opTTLArg  any           // opTTL, boxed once
	keys      sync.Map      // bucketKey's: Limiter key -> its hash's key, boxed
	nkeys     atomic.Int64  // entries in keys
	ops       atomic.Uint64 // operations begun: the rest of their ids

	downUntil atomic.Int64 // mono.Now (ns) until which operations fail at once; 0: up
	downSince atomic.Int64 // mono.Now (ns) of the first failure of the outage
	probing   atomic.Bool  // one operation tries the server

	refusedMu    sync.Mutex
	refusedKinds map[string]bool // the kinds of ErrRefused logged, at most maxRefusedKinds

	multi bool // a Cluster or a Ring: a script's keys must share a slot

	flushMu sync.Mutex
	pending []pendingSettle // settles queued, at most maxPending
	sending bool            // a goroutine sends pending
	closed  bool            // Close was called: settles are sent by their callers
	linger  time.Duration   // settleLinger (tests: longer)
	admits  atomic.Bool     // Admit ran: settles linger for an admission to carry them
	wait    *time.Timer     // the sender's wait for linger, made once, used by the one sender
	closing chan struct{}   // closed by Close: the sender waits no more
	senders sync.WaitGroup
	// settled, when set (tests), is told of each settle sent: its key,
	// tokens, when it was queued and when the server's reply came (zero
	// when none came: the outcome is unknown).
	settled func(key string, tokens float64, queued, applied time.Time)
}

// maxRefusedKinds bounds the kinds of refusal a Store logs: the first word
// of a reply comes from the server.
const maxRefusedKinds = 32

// New returns a Store for cfg, or an error starting with "redisstore:"
// naming the field: a nil Client, one without ContextTimeoutEnabled, a
// Prefix with a brace, a negative duration.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redisstore: nil Config.Client")
	}
	if !contextTimeouts(cfg.Client) {
		return nil, errors.New("redisstore: Config.Client without ContextTimeoutEnabled: Config.Timeout could not bound an operation")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, errors.New("redisstore: Config.Prefix contains a brace, which would break the hash tags")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"Timeout", &cfg.Timeout, DefaultTimeout}, {"Probe", &cfg.Probe, DefaultProbe}, {"BudgetTTL", &cfg.BudgetTTL, DefaultBudgetTTL},
		{"Refresh", &cfg.Refresh, DefaultRefresh}} {
		if *d.v < 0 {
			return nil, errors.New("redisstore: negative Config." + d.name)
		}
		*d.v = cmp.Or(*d.v, d.def)
	}
	opTTL := (cfg.Timeout + opSlack).Milliseconds()
	return &Store{c: cfg.Client, prefix: cmp.Or(cfg.Prefix, DefaultPrefix), timeout: cfg.Timeout, probe: cfg.Probe, budgetTTL: cfg.BudgetTTL,
		refresh: cfg.Refresh, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), opBase: strconv.FormatUint(rand.Uint64(), 36) + ".",
		opTTL: opTTL, opTTLArg: opTTL, multi: multiNode(cfg.Client), linger: settleLinger,
		closing: make(chan struct{})}, nil
}

// multiNode reports whether c spreads keys over several servers by slot
// (a Cluster or a Ring).
func multiNode(c redis.UniversalClient) bool {
	switch c.(type) {
	case *redis.ClusterClient, *redis.Ring:
		return true
	}
	return false
}

// contextTimeouts reports whether c honours context deadlines; a client
// type it does not know is trusted.
func contextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

// Available reports whether the last operation reached the server (no
// outage under way).
func (s *Store) Available() bool { return s.downUntil.Load() == 0 }

// do runs op under the per-operation timeout, unless an outage is under
// way and it is not this operation's turn to probe. The timeout is the
// earlier of the Store's Timeout and ctx's deadline, and whichever bounded
// op owns its timing out. An error of op is then:
//   - a refusal (see [ErrRefused]): returned wrapping ErrRefused, logged
//     once per kind; the server answered, so a probe's refusal ends an
//     outage and no refusal starts one;
//   - the caller's when op was cut short (canceled or timed out) and ctx
//     ended, or ctx's deadline bounded op and has passed (the network's
//     timeout fires a hair before ctx.Err() is set): ctx.Err() is
//     returned, and the Store's state is left as it was;
//   - otherwise (the Store's own timeout, a refused or dropped
//     connection, a state of the server that passes) wrapping
//     [ErrUnavailable], starting or extending the outage.
func (s *Store) do(ctx context.Context, op func(context.Context) error) error {
	until := s.downUntil.Load()
	if until != 0 {
		if int64(mono.Now()) < until || !s.probing.CompareAndSwap(false, true) {
			return errFailFast
		}
		defer s.probing.Store(false)
	}
	deadline := time.Now().Add(s.timeout)
	callerDeadline, callerBound := ctx.Deadline()
	callerBound = callerBound && !callerDeadline.After(deadline)
	octx, cancel := context.WithDeadline(ctx, deadline)
	err := op(octx)
	cancel()
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		if until != 0 { // only a probe ends an outage, not an operation begun before it
			s.up()
		}
		return err
	case refusal(err):
		if until != 0 {
			s.up()
		}
		s.refused(err)
		return &refused{err}
	case cut(err) && ctx.Err() != nil:
		return ctx.Err()
	case cut(err) && callerBound && !time.Now().Before(callerDeadline):
		<-ctx.Done() // closes at its deadline, which has passed
		return ctx.Err()
	}
	s.down(err)
	return &unavailable{err}
}

// cut reports whether err is an operation cut short: canceled, or timed
// out (a network deadline or a context's). Any other error (a refused or
// dropped connection, a reply) is the server's, whoever's context ended
// meanwhile.
func cut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// refusal reports whether err is a reply of the server (a Redis error)
// that names no state that passes: a refusal that asking again would only
// repeat.
func refusal(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	passing := moved || ask || redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err) || redis.IsNoReplicasError(err) ||
		redis.HasErrorPrefix(err, "BUSY ") || redis.HasErrorPrefix(err, "MISCONF ") || redis.HasErrorPrefix(err, "NOSCRIPT ")
	return !passing
}

// refused logs the first refusal of each kind (the reply's first word).
func (s *Store) refused(err error) {
	kind, _, _ := strings.Cut(err.Error(), " ")
	s.refusedMu.Lock()
	first := !s.refusedKinds[kind] && len(s.refusedKinds) < maxRefusedKinds
	if first {
		if s.refusedKinds == nil {
			s.refusedKinds = map[string]bool{}
		}
		s.refusedKinds[kind] = true
	}
	s.refusedMu.Unlock()
	if first {
		s.log.LogAttrs(context.Background(), slog.LevelError,
			"redisstore: redis refused an operation: a configuration error, not an outage (logged once per kind)",
			slog.String("kind", kind), slog.String("err", err.Error()))
	}
}

// errFailFast is what operations return during an outage between probes.
var errFailFast = &unavailable{errors.New("redisstore: waiting to probe the server again")}

// refused wraps the cause of a refused operation with ErrRefused.
type refused struct{ cause error }

func (e *refused) Error() string {
	return "redisstore: redis refused the operation (a configuration error, not an outage): " + e.cause.Error()
}
func (e *refused) Unwrap() []error { return []error{ErrRefused, e.cause} }

// unavailable wraps the cause of a failed operation with ErrUnavailable.
type unavailable struct{ cause error }

func (e *unavailable) Error() string   { return "redisstore: redis unavailable: " + e.cause.Error() }
func (e *unavailable) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// down starts an outage, or extends it after a failed probe.
func (s *Store) down(err error) {
	now := int64(mono.Now()) // a wall-clock step moves no outage
	if s.downSince.CompareAndSwap(0, now) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "redisstore: redis unavailable, layers decide without it",
			slog.String("err", err.Error()), slog.Duration("probe", s.probe))
	}
	s.downUntil.Store(int64(mono.Add(time.Duration(now), s.probe)))
}

// up ends an outage.
func (s *Store) up() {
	since := s.downSince.Swap(0)
	s.downUntil.Store(0)
	if since != 0 {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "redisstore: redis available again",
			slog.Duration("outage", mono.Now()-time.Duration(since)))
	}
}

// script is a Lua script with its SHA1 and text boxed once, as
// [Store.eval] sends them.
type script struct {
	*redis.Script
	sha, src any
}

func newScript(src string) script {
	sc := redis.NewScript(src)
	return script{sc, sc.Hash(), src}
}

// run runs script on keys and args through [Store.do], read (such as
// (*redis.Cmd).Int64) taking its reply: the reply read and do's error.
func run[T any](ctx context.Context, s *Store, read func(*redis.Cmd) (T, error), script *redis.Script, keys []string, args ...any) (T, error) {
	var v T
	err := s.do(ctx, func(ctx context.Context) error {
		var err error
		v, err = read(script.Run(ctx, s.c, keys, args...))
		return err
	})
	return v, err
}

// eval runs sc with args as its command: args[0:3] left for the command,
// the SHA1 and the number of keys (args[2], set by the caller), then the
// keys and the arguments. It sends EVALSHA, then EVAL when the server
// does not know the script (NOSCRIPT), as redis.Script.Run does, with no
// argument copied or boxed again.
func (s *Store) eval(ctx context.Context, sc script, args []any) *redis.Cmd {
	args[0], args[1] = "evalsha", sc.sha
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = s.c.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		args[0], args[1] = "eval", sc.src
		cmd = redis.NewCmd(ctx, args...)
		cmd.SetFirstKeyPos(3)
		_ = s.c.Process(ctx, cmd)
	}
	return cmd
}

// ints reads cmd's reply, a list of len(into) integers, into into.
func ints(cmd *redis.Cmd, into []int64) error {
	v, err := cmd.Slice()
	if err != nil {
		return err
	}
	if len(v) != len(into) {
		return errors.New("redisstore: malformed reply")
	}
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return errors.New("redisstore: malformed reply")
		}
		into[i] = n
	}
	return nil
}

// maxKeys bounds the bucket keys a Store keeps built (bucketKey); past
// it the cache starts again empty.
const maxKeys = 4096

// bucketKey returns the key of a Limiter key's hash, s.key("rl", key),
// boxed, built once per Limiter key (up to maxKeys kept).
func (s *Store) bucketKey(key string) any {
	if k, ok := s.keys.Load(key); ok {
		return k
	}
	var k any = s.key("rl", key)
	if s.nkeys.Add(1) > maxKeys {
		s.keys.Clear()
		s.nkeys.Store(1)
	}
	s.keys.Store(key, k)
	return k
}
