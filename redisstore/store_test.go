package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNewConfig(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Client: c}, ""},
		{Config{}, "nil Config.Client"},
		{Config{Client: cluster}, "without ContextTimeoutEnabled"},
		{Config{Client: c, Prefix: "a{b"}, "Prefix contains a brace"},
		{Config{Client: c, Timeout: -time.Second}, "negative Config.Timeout"},
		{Config{Client: c, Probe: -1}, "negative Config.Probe"},
		{Config{Client: c, BudgetTTL: -1}, "negative Config.BudgetTTL"},
		{Config{Client: c, Refresh: -1}, "negative Config.Refresh"},
	} {
		s, err := New(tc.cfg)
		if tc.want == "" {
			if err != nil || s.prefix != DefaultPrefix || s.timeout != DefaultTimeout || s.probe != DefaultProbe || s.budgetTTL != DefaultBudgetTTL || s.refresh != DefaultRefresh {
				t.Errorf("New(%+v) = %+v, %v; want the defaults", tc.cfg, s, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "redisstore: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

// TestKeysShareASlot: every key one script touches, the operation's
// record included, hashes to one Cluster slot, whatever the destination,
// client or key holds (braces included).
func TestKeysShareASlot(t *testing.T) {
	s := &Store{prefix: DefaultPrefix}
	b := &Budgets{s: s}
	for _, dest := range []string{"", "gpt-4o", "a}b", "{x}", "}"} {
		for _, client := range []string{"", "c", "{y}"} {
			keys := b.keys(dest, client, &limitsWithDest) // the client's, the destination's, the operation's
			for _, k := range keys[1:] {
				if slot(keys[0]) != slot(k) {
					t.Errorf("keys %q and %q hash to slots %d and %d", keys[0], k, slot(keys[0]), slot(k))
				}
			}
		}
	}
}

// slot is Redis Cluster's key slot: CRC16 of the hash tag (the text
// between the first '{' and the next '}', when not empty) or of the key.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

var limitsWithDest = retryLimits(1, 1)
