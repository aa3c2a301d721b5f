// Package adapt is the part of Portico's provider adapters (provider/openai,
// provider/anthropic, provider/gemini) that does not depend on an SDK: it
// lives in the core module and imports no SDK, and being internal to
// provider/ only the adapters import it.
//
// # One HTTP exchange
//
// An adapter makes one [Exchange] per Generate and hooks it under its SDK
// (an SDK middleware, or a RoundTripper under the SDK's HTTP client):
// [Exchange.Begin] before the request goes out, [Exchange.Watch] on what
// came back. The Exchange records what the SDK's errors do not carry:
// whether the request reached the transport and was written (httptrace's
// WroteRequest), the response's status and headers, an error body as sent,
// and the first error reading the body. It bounds the body at the
// transport, before the SDK decodes it: a Content-Length above
// [Exchange.Limit] is refused before a byte is read, a body of unknown
// length is read in blocks (so refusing it costs the limit, never twice
// that), and every read stops one byte past the limit. For a JSON body it
// keeps where the value's first and last bytes are, so that
// [Exchange.Whole] refuses data after the value, which a json.Decoder
// ignores.
//
// # Errors classified alike
//
// Every adapter classifies its failures in one order: the context first
// ([Exchange.Stopped]: the caller's cancel or deadline, a layer's own
// timeout, Transient before the request was written and Ambiguous after;
// then a body past the limit), then the provider's own error object (the
// adapter's part), then what is left ([Exchange.Failed]: a transport
// failure before or after the request was written, a body cut off, an
// answer the SDK could not decode). Error.NotSent is set whenever the
// request was never written, so that a rate limiter refunds the whole
// reservation. The text of an SDK error that may quote a body is withheld
// ([Withheld]).
//
// An event stream that ends inside an event (its last event holding data
// without the blank line that dispatches it, or its last line without an
// end) broke off: the SDKs' decoders drop such an event without an error,
// so the stream reader ends it with io.ErrUnexpectedEOF, recorded as
// ReadErr, and the answer is Ambiguous, a body cut off, never a success.
//
// # Any event is progress
//
// A stream's event that reaches no OnChunk (a role or usage delta, a
// block's boundary, a reasoning step) is reported with [Alive], as
// [portico.Progress]: the layers that bound a stream's time to its first
// sign of life count any event, not only text, so a model that thinks
// before it writes is not taken for a hung one. A keep-alive is no event:
// the stream reader drops comment lines and blank data lines before an
// SDK sees them, and Anthropic's ping is not reported, so a server that
// only keeps its connection alive is cut as a hung one.
package adapt
