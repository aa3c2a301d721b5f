// Package acrossreasoning holds the test that a conversation with
// reasoning falls back across providers (Anthropic, Gemini) through the
// preset without sending either one's opaque blocks to the other; it
// lives in the examples module, the one that builds every adapter.
package acrossreasoning
