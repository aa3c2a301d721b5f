package adapt

import (
	"context"

	"github.com/portico-llm/portico"
)

// Alive reports an event of a stream that reaches no OnChunk (a role or
// usage delta, a block's boundary, a reasoning step) as progress,
// [portico.Progress] with an empty Chunk: the layers that bound a stream's
// time to its first sign of life (a fallback group's share of a stream,
// retry's first-chunk and chunk-gap timeouts) count any event, not only
// text. An adapter calls it for each such event, and never for one it
// passes to OnChunk, which those layers see already, nor for a keep-alive
// (Anthropic's ping event; comment lines and blank data lines, which the
// adapters never see, see blankData): a server that sends only those is
// as silent as a hung one.
func Alive(ctx context.Context) { portico.Progress(ctx, portico.Chunk{}) }

// Think passes on a reasoning delta of a stream: to deliver, as
// Chunk.Reasoning, when stream (the caller asked for the reasoning
// stream), else as progress.
func Think(ctx context.Context, stream bool, text string, deliver func(portico.Chunk) error) error {
	if stream {
		return deliver(portico.Chunk{Reasoning: text})
	}
	portico.Progress(ctx, portico.Chunk{Reasoning: text})
	return nil
}
