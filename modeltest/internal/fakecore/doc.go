// Package fakecore is the part of modeltest's fake provider servers
// (fakeopenai, and the fakes of other providers' APIs) that does not depend
// on a provider's wire format: the server's lifecycle, request recording,
// per-model fault draws and scripts, pacing, stalls and cuts. A dialect
// package keeps what is its provider's own: routes, request decoding, the
// answer's and the event stream's encoding, and error bodies.
//
// # Lifecycle
//
// [New] builds a [Server] that is not listening; [Server.Start] serves it on
// 127.0.0.1 (an httptest.Server), [Server.StartPipe] over net.Pipe for a
// testing/synctest bubble, where every latency and stall passes in virtual
// time and the server is reached only through [Server.Client]. [Server.Close]
// ends every stall (each request's context is done when Close begins, and a
// call cut by Close drops its connection rather than ending as an empty 200)
// and waits for the server's goroutines.
//
// # One request
//
// For each request the core, in order: asks the dialect's Route whether the
// path and method are the API's; reads the body; asks Decode for the model
// named, the stream flag and the decoded request; draws the request's
// [Fault] (the model's next [Model].Script step while the script lasts, else
// one seeded draw over Model.Faults by Fraction) and its latency jitter;
// records it ([Server.Requests], bounded by Config.RecordLimit;
// [Server.Count]; Config.OnRequest); echoes the traceparent header; answers
// a body Decode refused with BadRequest and an unknown model with
// UnknownModel; waits the model's latency and any FaultStallBeforeHeaders;
// and hands a [Call] to the dialect's Serve. With Config.Handler set the
// core records the request and then lets that handler answer it, body
// restored, so a test's own handler runs on the same loopback or in-memory
// server.
//
// # Writing a dialect
//
// A dialect package builds a [Dialect] of its decoded request type, maps its
// public model config onto [Model] and [Pacing], and aliases [Fault],
// [FaultKind] (with its constants) and [Request] so that every fake shares
// one fault vocabulary. Its Serve decides the answer and uses the Call:
//
//	Serve: func(c *fakecore.Call, req *myRequest) {
//		if c.ServeFault(myErrorBody) { // FaultStatus, FaultDisconnect
//			return
//		}
//		// dialect faults: context overflow, rate limits, ...
//		if !c.Stream {
//			c.Whole(encode(answer), answer.tokens) // TTFT, pace, FaultMalformed, FaultStallMidStream
//			return
//		}
//		if _, ok := c.BeginStream(fakecore.Waiting{}); !ok { // headers, then TTFT
//			return
//		}
//		if !c.Events(len(deltas), sendDelta, myErrorEvent) { // pace and mid-stream faults
//			return
//		}
//		c.Event("", finalEvent) // the dialect's tail
//	}
//
// Dialect.MalformedEvent renders FaultMalformed inside a stream (a dialect
// whose SDK reads only named events names it). [Call.Reply] writes any
// status with the fault's headers (retry-after, retry-after-ms,
// x-should-retry, then Fault.Header, so a script can send malformed
// values); Fault.Body replaces the dialect's error body or error event data
// verbatim, and Fault.Event names the error event.
package fakecore
