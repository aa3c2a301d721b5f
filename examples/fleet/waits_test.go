package main_test

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// command is one Redis command an instance sent, as its client saw it.
type command struct {
	name     string
	start    time.Time
	took     time.Duration // how long the sender waited for it
	deadline time.Duration // its context's deadline, from start (negative: already passed)
	bounded  bool          // its context had a deadline
	err      error
}

// commands records every command the fleet's clients send (a go-redis
// hook on each): what each call waited on, whatever the CPU did
// meanwhile.
type commands struct {
	mu  sync.Mutex
	all []command
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next // redisstore sends no pipelines
}

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		rec := command{name: cmd.Name(), start: start, took: time.Since(start), err: err}
		if dl, ok := ctx.Deadline(); ok {
			rec.deadline, rec.bounded = dl.Sub(start), true
		}
		c.mu.Lock()
		c.all = append(c.all, rec)
		c.mu.Unlock()
		return err
	}
}

// sent returns the commands recorded so far.
func (c *commands) sent() []command {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]command(nil), c.all...)
}
