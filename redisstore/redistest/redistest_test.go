package redistest

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartWithAOFSurvivesKill: a write acknowledged by a server started
// with --appendonly yes --appendfsync always is read back from its
// append-only file after SIGKILL and Restart; one started by Start comes
// back empty. Restart used to give no options but Start's, so nothing
// survived it.
func TestStartWithAOFSurvivesKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // "" for absent
	}{
		{"Start", nil, ""},
		{"StartWith AOF", []string{"--appendonly", "yes", "--appendfsync", "always"}, "v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := StartWith(t, tc.args...)
			ctx := context.Background()
			c := NewClient(srv.Addr)
			defer c.Close()
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			err := srv.cmd.Process.Kill() // SIGKILL: nothing written at shutdown
			srv.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			srv.Stop() // reaps it
			srv.Restart()
			got, err := c.Get(ctx, "k").Result()
			if errors.Is(err, redis.Nil) {
				got, err = "", nil
			}
			if err != nil || got != tc.want {
				t.Errorf("k after SIGKILL and Restart = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
