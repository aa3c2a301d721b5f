package admit

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type owner struct{ given []int }

func (o *owner) Unclaimed(_ context.Context, b *Bucket) { o.given = append(o.given, b.Cost) }

// TestClaimOnce: a done step is claimed once, by its owner and key only;
// a take charged and never claimed is given back once, and one refused or
// not done is not.
func TestClaimOnce(t *testing.T) {
	a, b := &owner{}, &owner{}
	p := &Plan{NBuckets: 2, HasDeposit: true}
	p.Buckets[0] = Bucket{Owner: a, Key: "k", Cost: 7, Done: true}
	p.Buckets[1] = Bucket{Owner: b, Key: "k", Cost: 5, Done: true}
	p.Deposit = Deposit{Owner: a, Dest: "d", Client: "c", Done: true}
	ctx := With(context.Background(), p)
	if From(ctx) != p || From(context.Background()) != nil {
		t.Fatal("From does not return the plan With put in")
	}
	if got := From(ctx).Take(a, "other"); got != nil {
		t.Errorf("Take of another key = %v, want nil", got)
	}
	if got := From(ctx).Take(a, "k"); got != &p.Buckets[0] {
		t.Errorf("Take(a, k) = %v, want the first bucket", got)
	}
	if got := From(ctx).Take(a, "k"); got != nil {
		t.Errorf("second Take(a, k) = %v, want nil: claimed once", got)
	}
	if (*Plan)(nil).Take(a, "k") != nil || (*Plan)(nil).Deposited(a, "d", "c") {
		t.Error("a nil plan has a step")
	}
	if p.Deposited(b, "d", "c") || !p.Deposited(a, "d", "c") || p.Deposited(a, "d", "c") {
		t.Error("the deposit is not claimed once, by its owner only")
	}
	p.Unclaimed(ctx)
	p.Unclaimed(ctx)
	if len(a.given) != 0 || len(b.given) != 1 || b.given[0] != 5 {
		t.Errorf("given back: a %v, b %v; want nothing and [5]", a.given, b.given)
	}
	q := &Plan{NBuckets: 2}
	q.Buckets[0] = Bucket{Owner: a, Key: "k", Cost: 7, Done: true, Wait: 1, Which: "tokens"}
	q.Buckets[1] = Bucket{Owner: b, Key: "k", Cost: 5}
	q.Unclaimed(ctx)
	if len(a.given) != 0 || len(b.given) != 1 {
		t.Errorf("a refused take or one not done was given back: a %v, b %v", a.given, b.given)
	}
}
