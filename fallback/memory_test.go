package fallback

import (
	"math"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestMemoryCooldowns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewMemoryCooldowns(3)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if !c.Until("a").IsZero() || c.Len() != 0 {
			t.Errorf("empty: Until(a) = %v, Len %d; want zero, 0", c.Until("a"), c.Len())
		}
		c.Set("a", now.Add(5*time.Second))
		c.Set("a", now.Add(2*time.Second)) // earlier: the later end is kept
		if got := c.Until("a"); !got.Equal(now.Add(5 * time.Second)) {
			t.Errorf("Until(a) = %v, want now+5s", got)
		}
		c.Set("a", now.Add(7*time.Second))
		c.Set("b", now.Add(time.Second))
		c.Set("c", now.Add(9*time.Second))
		c.Set("past", now.Add(-time.Second)) // already over: nothing to skip
		if !c.Until("past").IsZero() || c.Len() != 3 {
			t.Errorf("Until(past) = %v, Len %d; want zero, 3", c.Until("past"), c.Len())
		}
		c.Set("e", now.Add(3*time.Second))
		// Full at 3: the new key evicts the cooldown that ends first.
		if c.Len() != 3 || !c.Until("b").IsZero() || !c.Until("a").Equal(now.Add(7*time.Second)) || !c.Until("e").Equal(now.Add(3*time.Second)) {
			t.Errorf("after 4 keys into 3: Len %d, a %v, b %v, e %v; want 3 held, b (ending first) evicted", c.Len(), c.Until("a"), c.Until("b"), c.Until("e"))
		}
		time.Sleep(7 * time.Second)
		if !c.Until("a").IsZero() || c.Until("c").IsZero() || c.Len() != 3 {
			t.Errorf("at 7s: a %v, c %v, Len %d; want a ended, c held, 3 held (a and e ended, not dropped yet)", c.Until("a"), c.Until("c"), c.Len())
		}
		c.Set("d", time.Now().Add(time.Second)) // an addition drops what ended (a, e)
		if c.Len() != 2 {
			t.Errorf("Len after adding d = %d, want 2 (c, d)", c.Len())
		}
		c.Set("a", time.Now().Add(time.Second)) // an ended key comes back
		if c.Until("a").IsZero() || c.Len() != 3 {
			t.Errorf("Until(a) after a new Set = %v, Len %d; want a cooldown, 3 held (a, c, d)", c.Until("a"), c.Len())
		}
		time.Sleep(9 * time.Second)
		for _, k := range []string{"a", "c", "d"} {
			if !c.Until(k).IsZero() {
				t.Errorf("after every cooldown ended: Until(%s) = %v, want zero", k, c.Until(k))
			}
		}
	})
	if _, err := NewMemoryCooldowns(-1); err == nil || err.Error() != "fallback: NewMemoryCooldowns: negative maxKeys" {
		t.Errorf("NewMemoryCooldowns(-1) = %v, want the negative maxKeys error", err)
	}
}

// Until takes no lock and allocates nothing, with or without a cooldown.
func TestMemoryCooldownsUntilAllocs(t *testing.T) {
	c, _ := NewMemoryCooldowns(0)
	if n := testing.AllocsPerRun(1000, func() { c.Until("primary") }); n != 0 {
		t.Errorf("Until on an empty store: %v allocs, want 0", n)
	}
	c.Set("primary", time.Now().Add(time.Hour))
	if n := testing.AllocsPerRun(1000, func() { c.Until("primary"); c.Until("other") }); n != 0 {
		t.Errorf("Until with a cooldown: %v allocs, want 0", n)
	}
}

// Concurrent Sets of old and new keys, with the map copied under them, lose
// no cooldown: every key ends up with the latest time set for it.
func TestMemoryCooldownsConcurrent(t *testing.T) {
	c, _ := NewMemoryCooldowns(0)
	base := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := "k" + strconv.Itoa(i%50)
				c.Set(key, base.Add(time.Duration(w*200+i)*time.Millisecond))
				c.Until(key)
			}
		})
	}
	wg.Wait()
	if c.Len() != 50 {
		t.Errorf("Len = %d, want 50", c.Len())
	}
	for i := range 50 {
		key := "k" + strconv.Itoa(i)
		// The latest Set of key i is worker 7's last with i%50 == i: 7*200 + 150+i.
		want := base.Add(time.Duration(7*200+150+i) * time.Millisecond)
		if got := c.Until(key); !got.Equal(want) {
			t.Errorf("Until(%s) = %v, want %v", key, got, want)
		}
	}
}

// A cooldown past what UnixNano holds (an open-for-good breaker's, say)
// is held until the end of that range, not wrapped into the past.
func TestMemoryCooldownsFarFuture(t *testing.T) {
	c, _ := NewMemoryCooldowns(0)
	c.Set("a", time.Now().Add(time.Duration(math.MaxInt64)).Add(time.Duration(math.MaxInt64)))
	if got := c.Until("a"); !got.Equal(lastNano) {
		t.Errorf("Until after a Set 584 years ahead = %v, want %v", got, lastNano)
	}
}
