package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

func TestPart(t *testing.T) {
	long := strings.Repeat("x", maxPart+1)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"tenant-42", "tenant-42"},
		{"6:client|9:tenant-42/gpt-4o", "6:client|9:tenant-42/gpt-4o"},
		{"a}b{c", "a%7Db%7Bc"},
		{"50%", "50%25"},
		{"#x", "%23x"},
		{"é ", "%C3%A9%20"},
		{strings.Repeat("x", maxPart), strings.Repeat("x", maxPart)},
		{long, "#Gajwfut_PQwLc3fjfXLszeFEzv60S-rJwyJxMaUmaI0"},
		{strings.Repeat("}", 32), strings.Repeat("%7D", 32)},
		{strings.Repeat("}", 33), "#YzVngXwQp9LvFhit3TZF8sDLm-ugt7FbLVutzvHaOi8"},
	} {
		if got := part(tc.in); got != tc.want {
			t.Errorf("part(%.40q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzPart: distinct parts never share an encoding, and none holds a
// brace or exceeds maxPart bytes.
func FuzzPart(f *testing.F) {
	f.Add("x}:c:y", "m}:c:x")
	f.Add("%7D", "}")
	f.Add(strings.Repeat("a", maxPart+1), "#")
	f.Fuzz(func(t *testing.T, a, b string) {
		pa, pb := part(a), part(b)
		if a != b && pa == pb {
			t.Fatalf("part(%q) = part(%q) = %q", a, b, pa)
		}
		if strings.ContainsAny(pa, "{}") || len(pa) > maxPart {
			t.Fatalf("part(%q) = %q: a brace, or longer than %d", a, pa, maxPart)
		}
	})
}

// TestKeysCannotCollide: destination "m" with client "x}:c:y" and
// destination "m}:c:x" with client "y" keep two retry budgets (they shared
// one key when '}' ended the tag): each spends its only token.
func TestKeysCannotCollide(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	ctx := context.Background()
	bl := &retry.BudgetLimits{Capacity: 1e9}
	pairs := [][2]string{{"m", "x}:c:y"}, {"m}:c:x", "y"}}
	k0, k1 := s.Budgets().keys(pairs[0][0], pairs[0][1], bl)[0], s.Budgets().keys(pairs[1][0], pairs[1][1], bl)[0]
	if k0 == k1 {
		t.Fatalf("both pairs have the key %q", k0)
	}
	for _, p := range pairs {
		if refused, err := s.Budgets().Spend(ctx, p[0], p[1], bl); err != nil || refused != "" {
			t.Errorf("Spend(%q, %q), the pair's first = %q, %v; want taken: the other pair's spend reached its bucket", p[0], p[1], refused, err)
		}
	}
}

// TestTenantsCannotChooseTheirSlot: 200 tenants named "a}0" ... "a}199",
// each making one call through a shared Limiter on a Redis Cluster, land
// their buckets in as many slots as random names would (all 200 shared one
// slot when '}' ended the tag), as CLUSTER KEYSLOT reports.
func TestTenantsCannotChooseTheirSlot(t *testing.T) {
	srv := redistest.StartCluster(t)
	c := srv.ClusterClient(t)
	s, err := New(Config{Client: c, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	keys := sharedKeys(t, s, 200, func(i int) string { return "a}" + strconv.Itoa(i) })
	ctx := context.Background()
	slots := map[int64]bool{}
	for _, k := range keys {
		n, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int64(slot(k)) != n {
			t.Fatalf("slot(%q) = %d, CLUSTER KEYSLOT %d", k, slot(k), n)
		}
		slots[n] = true
	}
	t.Logf("200 tenants a}N: %d keys in %d slots", len(keys), len(slots))
	if len(keys) != 200 || len(slots) < 195 {
		t.Errorf("200 tenants a}N: %d keys in %d slots, want 200 keys in at least 195 (200 names hashed at random into 16384 slots)", len(keys), len(slots))
	}
}

// TestKeyLengthBounded: a tenant id of 1 MB, and a destination and client
// of 1 MB each, make keys of at most maxKeyLen bytes after the prefix.
func TestKeyLengthBounded(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	huge := strings.Repeat("t", 1<<20)
	keys := sharedKeys(t, s, 1, func(int) string { return huge })
	bl := &retry.BudgetLimits{Deposit: 1, Capacity: 1e9, DestinationDeposit: 1, DestinationCapacity: 1e9}
	if _, err := s.Budgets().Spend(context.Background(), huge, huge+"!", bl); err != nil {
		t.Fatal(err)
	}
	all := scanKeys(t, s, "*")
	longest := 0
	for _, k := range all {
		longest = max(longest, len(k)-len(DefaultPrefix))
	}
	t.Logf("%d keys (bucket, budgets, operation records), the longest %d bytes after the prefix", len(all), longest)
	if len(keys) != 1 || len(all) < 4 || longest > maxKeyLen {
		t.Errorf("%d bucket keys, %d keys, the longest %d bytes after the prefix; want 1, at least 4, at most %d", len(keys), len(all), longest, maxKeyLen)
	}
}

// sharedKeys makes one call for each of n tenants through a Limiter
// shared on s (the client limiter of package stack: Name "client", keyed
// by client and model) and returns the bucket keys it left in Redis.
func sharedKeys(t *testing.T, s *Store, n int, tenant func(int) string) []string {
	t.Helper()
	lim, err := ratelimit.New(ratelimit.Config{Limits: ratelimit.Limits{Requests: 10, Period: time.Minute},
		Shared: ratelimit.Shared{Store: s.Buckets(), Name: "client"}})
	if err != nil {
		t.Fatal(err)
	}
	m := lim.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "ok"}, nil
	}))
	ctx := context.Background()
	for i := range n {
		if _, err := m.Generate(ctx, &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: tenant(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return scanKeys(t, s, s.prefix+"rl:*")
}

// scanKeys returns the keys matching pattern (the test servers have one
// node).
func scanKeys(t *testing.T, s *Store, pattern string) []string {
	t.Helper()
	keys, err := s.c.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
