package throttle

import (
	"sync"
	"sync/atomic"
)

// windows holds a Throttle's windows, one per destination. A lookup is
// lock-free: the window last found, then a sync.Map. Inserting keys past
// maxKeys sweeps the map under mu, at most once per maxKeys/16 such keys.
type windows struct {
	maxKeys  int64
	m        sync.Map // string -> *window
	n        atomic.Int64
	hot      atomic.Pointer[window]
	overCap  atomic.Int64
	mu       sync.Mutex
	overflow *window
}

func newWindows(maxKeys int) *windows {
	return &windows{maxKeys: int64(maxKeys), overflow: &window{}}
}

// get returns dest's window, creating it if needed. For an existing
// destination it does not allocate; for the one last used it costs two
// atomic loads and a string compare.
func (ws *windows) get(dest string) *window {
	if h := ws.hot.Load(); h != nil && h.key == dest && h.used.Load() {
		return h
	}
	if v, ok := ws.m.Load(dest); ok {
		w := v.(*window)
		if !w.used.Load() {
			w.used.Store(true)
		}
		ws.setHot(w)
		return w
	}
	return ws.insert(dest)
}

// lookup returns dest's window without creating it, or nil.
func (ws *windows) lookup(dest string) *window {
	if v, ok := ws.m.Load(dest); ok {
		return v.(*window)
	}
	return nil
}

// setHot makes w the window last found, unless it was evicted: eviction
// marks a window dead before clearing hot, so whichever runs last sees the
// other.
func (ws *windows) setHot(w *window) {
	ws.hot.Store(w)
	if w.dead.Load() {
		ws.hot.CompareAndSwap(w, nil)
	}
}

func (ws *windows) insert(dest string) *window {
	nw := &window{key: dest}
	nw.used.Store(true)
	if v, loaded := ws.m.LoadOrStore(dest, nw); loaded {
		return v.(*window)
	}
	if ws.n.Add(1) <= ws.maxKeys {
		ws.setHot(nw)
		return nw
	}
	if ws.overCap.Add(1) >= max(ws.maxKeys/16, 1) {
		ws.overCap.Store(0)
		ws.sweep(dest)
	}
	if ws.n.Load() <= ws.maxKeys {
		ws.setHot(nw)
		return nw
	}
	// Nothing could be evicted: the new destination shares the overflow window.
	if _, ok := ws.m.LoadAndDelete(dest); ok {
		ws.n.Add(-1)
	}
	nw.dead.Store(true)
	return ws.overflow
}

// sweep evicts, except keep, every window not used since the previous sweep,
// and marks the survivors unused.
func (ws *windows) sweep(keep string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.m.Range(func(k, v any) bool {
		w := v.(*window)
		if w.key == keep {
			return true
		}
		if !w.used.Load() {
			if _, ok := ws.m.LoadAndDelete(k); ok {
				w.dead.Store(true)
				ws.hot.CompareAndSwap(w, nil)
				ws.n.Add(-1)
			}
			return true
		}
		w.used.Store(false)
		return true
	})
}
