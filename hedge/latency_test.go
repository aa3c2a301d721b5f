package hedge

import (
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	for _, c := range []struct {
		d     time.Duration
		b     int
		upper time.Duration
	}{
		{0, 0, 1152},
		{1023, 0, 1152},
		{1024, 0, 1152}, // 2^10: the first bucket is [1024, 1152)
		{1151, 0, 1152},
		{1152, 1, 1280},
		{2047, 7, 2048},
		{2048, 8, 2304},
		{100 * time.Millisecond, 131, 100663296}, // 2^26 <= 1e8 < 2^27: bucket 16*8 + floor(8*(1e8/2^26 - 1))
		{time.Duration(1) << 42, numBuckets - 1, 1 << 42},
		{time.Duration(1) << 50, numBuckets - 1, 1 << 42},
	} {
		if got := bucketOf(c.d); got != c.b {
			t.Errorf("bucketOf(%d) = %d, want %d", c.d, got, c.b)
		}
		if got := upper(c.b); got != c.upper {
			t.Errorf("upper(%d) = %d, want %d", c.b, got, c.upper)
		}
	}
	// Every latency in range lies in its bucket, below the upper bound and at
	// most 12.5% under it.
	for d := time.Duration(1024); d < 1<<42; d = d*9/8 + 1 {
		b := bucketOf(d)
		if u := upper(b); d >= u || float64(u-d)/float64(u) > 0.125 {
			t.Fatalf("latency %d in bucket %d of upper bound %d", d, b, u)
		}
		if b > 0 && d < upper(b-1) {
			t.Fatalf("latency %d below its bucket %d", d, b)
		}
	}
}

func TestQuantile(t *testing.T) {
	var l Latency
	for i := range 49 {
		l.Add(time.Duration(i+1) * time.Millisecond)
	}
	if _, ok := l.Quantile(0.5); ok {
		t.Fatal("Quantile with 49 samples answered, want false")
	}
	// 95 calls of 100 ms and 5 of 1 s: the p95 is 100 ms's bucket, the p96 1 s's.
	var m Latency
	for i := range 100 {
		d := 100 * time.Millisecond
		if i%20 == 19 {
			d = time.Second
		}
		m.Add(d)
	}
	if q, ok := m.Quantile(0.95); !ok || q != upper(bucketOf(100*time.Millisecond)) {
		t.Errorf("p95 = %v, %v, want %v", q, ok, upper(bucketOf(100*time.Millisecond)))
	}
	if q, _ := m.Quantile(0.96); q != upper(bucketOf(time.Second)) {
		t.Errorf("p96 = %v, want %v", q, upper(bucketOf(time.Second)))
	}
}

// The sketch keeps the last 1,000 to 2,000 samples: after 2,000 samples of
// 1 s, 1,000 of 10 ms leave the median at 1 s, and the 1,000th more at 10 ms.
func TestTurnover(t *testing.T) {
	var l Latency
	for range 2000 {
		l.Add(time.Second)
	}
	for range 999 {
		l.Add(10 * time.Millisecond)
	}
	if q, _ := l.Quantile(0.5); q != upper(bucketOf(time.Second)) {
		t.Errorf("median after 999 fast samples = %v, want 1 s's bucket", q)
	}
	l.Add(10 * time.Millisecond) // fills the half: the 1 s half is dropped
	l.Add(10 * time.Millisecond)
	if q, _ := l.Quantile(0.999); q != upper(bucketOf(10*time.Millisecond)) {
		t.Errorf("p99.9 after the turnover = %v, want 10 ms's bucket", q)
	}
}
