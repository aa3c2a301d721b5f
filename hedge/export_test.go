package hedge

// CoarseInBubble sets coarseInBubble for a test: races in a bubble run on
// a coarse scheduler.
func CoarseInBubble(on bool) { coarseInBubble = on }

// Tick is the scheduler's tick for a delay d.
var Tick = tickFor
