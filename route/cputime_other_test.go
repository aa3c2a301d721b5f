//go:build !unix

package route

import "time"

func cpuTime() time.Duration { return 0 }
