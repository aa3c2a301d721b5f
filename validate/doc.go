// Package validate is Portico's acceptance pipeline: every answer, from the
// primary route or a fallback, passes it before it is returned, cached or
// handed to a tool executor. HTTP 200 from a fallback is not success: an
// answer is accepted only when it keeps the request's contract.
//
// # The pipeline
//
// A [Validator], built with [New] from a [Config] whose zero value is the
// strict default, runs six stages in order and collects every violation
// before deciding (it does not stop at the first):
//
//  1. envelope ([StageEnvelope]): a response came back; it has text, or tool
//     calls when its finish reason says tool_calls;
//  2. finish reason ([StageFinish]): content_filter is always rejected;
//     length (truncation) is rejected where the full output is needed, by
//     default when the request has a Schema or tools ([LengthPolicy]);
//  3. structured output ([StageSchema]): the text is exactly one JSON value,
//     within the [Limits] (bytes, depth and numbers), and
//     valid against req.Schema.JSON (in the draft it is written in: see
//     Schemas);
//  4. typed Go checks ([StageTyped], [Config.Checks]): required fields,
//     enums, invariants, over the shared decoded value or a Go type
//     ([Typed]);
//  5. tool calls ([StageTools]): every call names a tool of req.Tools, and
//     its arguments, in any shape providers send them in (see Tool
//     calls), are valid against the tool's Parameters schema;
//  6. workload semantic checks ([StageSemantic], [Config.Semantic]), such as
//     an invoice's rules: total not negative, currency supported, line totals
//     summing to the total within an explicit tolerance (the package's tests
//     ship that example).
//
// The text is decoded once (encoding/json with UseNumber, as the schema
// library's own jsonschema.UnmarshalJSON does) and the value is shared by the
// schema and the checks; on an accepted answer the pipeline allocates nothing
// beyond that decode, the library's validation and, when checks are
// configured, the one [Answer] they share.
//
// # Rejections
//
// A rejected answer becomes a *portico.Error whose class says whose doing it
// is, so that retry and fallback layers act on it as on any error of that
// class: InvalidResponse (retried, and a fallback moves on) for an answer
// that is wrong; Incompatible (not retried, not counted, a fallback
// moves on) for a provider's content filter and for a cut at the route's own
// output limit (short of the request's MaxOutputTokens, or with none set);
// Permanent (the caller must ask for more) for a cut at the request's own
// MaxOutputTokens, which every route would make. A rejection of what was
// asked of the answer (the schema, the checks, the tools' arguments)
// matches [portico.ErrAnswerRefused], which breakers do not count (what one
// request asks says nothing of the route's health), so one tenant's
// requests cannot open a route's breaker for every tenant; one of the
// envelope or the finish (no answer, blank text) is the route's, and counts. Metrics can count it; it
// wraps a [*Rejection] that lists every
// [Violation] with the JSON pointer (RFC 6901) of the offending value and the
// rule it broke: a schema keyword ("required", "minimum"), a Rule* constant,
// or a check's own name. Values are never reported, since answers may hold
// private content, unless [Config.IncludeValues] is set; error strings carry
// only stages and rules. The rejected Response rides along in
// Rejection.Response for human review.
//
// There is no silent repair. The one normalization of the text is opt-in
// ([Config.TrimSpace]): trimming white space around it. A missing
// field is never guessed, a code fence around JSON is not stripped, tool
// arguments are never rewritten: guessing a financial field or rewriting
// arguments would change what the model said.
//
// # Tool calls
//
// Providers send the arguments of one call in several shapes, and each is
// accepted when the object it holds is valid against the tool's
// Parameters: the object's JSON text, white space around it allowed (what
// adapters write for a provider that sends the object itself); a
// JSON string whose content is that text (arguments encoded twice, as some
// OpenAI-compatible servers send them); and, for a call without
// arguments, an empty or blank text or null (OpenAI-compatible servers
// send "" for a tool without parameters), read as {}. Any other value is
// judged as it is by the schema. Wrap hands on the object's text in place
// of the other shapes (a new ToolCalls slice), so that a tool executor
// reads one shape: the encoding changes, never the content.
// FuzzArguments checks that any object accepted in one shape is accepted,
// as the same object, in the others.
//
// # Schemas
//
// Schemas are compiled with github.com/santhosh-tekuri/jsonschema v6, once
// per distinct schema text, and kept in a bounded cache ([Config.CacheSize]).
// v6 rather than v5 because it is the maintained line, it decodes and
// validates faster (v5 was about 40% slower on our benchmark object), it
// defaults to draft 2020-12, and its errors are typed values (kind.Required, kind.Type, ...) with instance locations, which is
// what lets the pipeline report each violation as pointer and rule without
// quoting values. External $refs are refused: a request's schema cannot make
// the validator read files or fetch URLs. A schema that does not compile
// fails the request with a Permanent error wrapping [ErrSchema] before any
// model is called ([Validator.Prepare]).
//
// The rule is that validation refuses no answer valid for the schema the
// request sent, whichever draft providers accept it is written in: 04, 06,
// 07, 2019-09 or 2020-12, each with its own semantics. A schema's
// "$schema" names its draft. Without one it is read as 2020-12 (the
// library's default, and what MCP and current provider documentation
// assume); a schema that is not a valid 2020-12 schema, because it was
// written for an earlier draft ("items" as an array, a boolean
// "exclusiveMinimum"), is read as the newest earlier draft it is valid
// under rather than refused. "format" is an annotation in every draft
// (drafts 04 to 07 leave its assertion to the implementation; 2019-09 and
// 2020-12 make it one), asserted only where a 2019-09 or 2020-12
// metaschema's $vocabulary requires it or [Config.AssertFormat] asks.
// Patterns are ECMA-262 regular expressions, run by Go's regexp (RE2):
// the escapes RE2 lacks or reads otherwise (\uXXXX, \u{...}, \cX, \s
// and \S) are rewritten to RE2's, and a pattern RE2 cannot run
// (lookaround, backreferences) is not asserted rather than its schema
// refused.
// TestJSONSchemaSuite runs every required case of the official
// JSON-Schema-Test-Suite for the five drafts through [Validator.Check]
// (testdata/jsonschema-suite, whose README lists the cases left out: those
// that fetch a remote document), and TestJSONSchemaSuiteECMARegex its
// optional ECMA-262 pattern cases.
//
// # OpenAI strict mode
//
// [StrictCompatible] tells whether a schema fits OpenAI's strict
// structured-output subset, and why not, with pointers into the schema.
// Package provider/openai runs it on every request whose Schema is Strict
// and refuses one outside the subset before sending, with a [*StrictError]
// that lists every problem: Incompatible, not Permanent, since the subset
// is OpenAI's and a route whose strict mode is another provider's (a
// Claude route declared SchemaStrict) may serve the same schema, so a
// fallback moves on and no breaker counts it. The
// subset, as OpenAI's Structured Outputs guide documents it ("Supported
// schemas"):
//
//   - the root is an object schema ("type": "object"), not anyOf or enum;
//   - every object sets "additionalProperties": false and lists every one of
//     its properties in "required" (optional fields are nullable types
//     instead);
//   - only the keywords of the subset: type, properties, required,
//     additionalProperties, items, anyOf, enum, const, $ref (within the
//     document), $defs, annotations, pattern and format (date-time, time,
//     date, duration, email, hostname, ipv4, ipv6, uuid), multipleOf,
//     minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems,
//     maxItems; so no allOf, not, if/then/else, dependentRequired,
//     patternProperties, minLength, uniqueItems, ...;
//   - at most 5,000 object properties and 10 levels of object nesting; at
//     most 120,000 characters of property names, definition names, enum and
//     const strings; at most 1,000 enum values, and an enum of more than 250
//     strings at most 15,000 characters.
//
// It also reports what the API rejects with a 400 although the guide does
// not list it (errors quoted in openai/openai-agents-python#449 and
// community reports): an object schema without "properties" ("object schema
// missing properties"), an array schema without "items" ("array schema
// missing items"), and a schema with no "type" ("schema must have a 'type'
// key"; anyOf, $ref, enum and const are taken as typing it).
//
// # Hostile answers
//
// Before decoding, one pass over the text checks the size, nesting and number
// limits, so that deep nesting or a number such as 1e1000000 (which the
// validator would expand with math/big) costs time linear in the text's
// length. FuzzCheck feeds arbitrary bytes through the whole pipeline.
//
// # Streaming
//
// With a Schema (or checks) and a streaming caller (req.OnChunk set), the
// default buffers: the inner Model still streams, but the chunks are held back
// and the accepted text reaches the caller as one chunk. Each chunk held back
// is reported with [portico.Progress], so the first-token and gap timeouts of
// a retry layer outside the validator (where it is recommended, see below)
// see a live stream: they fire when the inner stream stalls, not merely
// because nothing reached them yet. Timeouts of layers inside the validator
// see the chunks themselves. The trade-off: the caller's
// time to first token becomes the time to the whole answer, in exchange for
// never showing an answer that is then rejected, and for leaving retry and
// fallback free to move on after a rejection (no token reached the caller).
// [Config.PassThroughChunks] streams unvalidated chunks instead: early
// tokens, but a rejection then comes after the caller has seen the text, and
// outer layers can no longer retry transparently.
//
// A continuation of a broken stream (a request with a Prefix, sent by a
// fallback group) is judged whole: the Prefix joined to the answer's text by
// a [portico.Seam], whose refusal (a restart that contradicts the Prefix) is
// returned as it is. The Response keeps the continuation's text, which is
// what the caller had not yet received; Config.TrimSpace trims only its end.
//
// # Where it goes
//
// Inside each route, below retry and breaker and above the provider, so a
// rejection counts as the route's failure and a fallback's answer is judged
// like the primary's: Chain(provider, breaker.Wrap, retry.Wrap, v.Wrap).
// Layers that judge answers themselves (a cascade's acceptance test) call
// [Validator.Check] directly.
package validate
